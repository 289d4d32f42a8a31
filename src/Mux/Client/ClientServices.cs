using System.Collections.Frozen;
using System.Diagnostics.CodeAnalysis;
using Mux.Server;

namespace Mux.Client;

/// <summary>
/// The services a <see cref="MuxClient"/> serves to its server (MuxClient.AddService), by method
/// id. One per client, shared by every connection it opens, so a connection made by a reconnect
/// serves the same services as the first.
/// </summary>
internal sealed class ClientServices
{
    private readonly Lock _lock = new();

    // Methods by id. Replaced whole under _lock by Add (rare, at set-up); read without the lock by
    // the reader loops of the client's connections.
    private volatile FrozenDictionary<uint, ServerMethod> _methods = FrozenDictionary<uint, ServerMethod>.Empty;

    /// <summary>Serves <typeparamref name="TService"/> with one shared implementation.</summary>
    /// <exception cref="InvalidOperationException">No dispatcher is registered for the interface,
    /// or a method id is already served.</exception>
    public void Add<TService>(TService implementation)
        where TService : class
    {
        MuxServiceDefinition<TService> definition = MuxServiceRegistry.GetDefinition<TService>();
        lock (_lock)
        {
            var methods = new Dictionary<uint, ServerMethod>(_methods);
            foreach (MuxMethodDefinition<TService> method in definition.Methods.Values)
            {
                var bound = new SingletonServerMethod<TService>(definition.ServiceName, method, implementation);
                if (!methods.TryAdd(bound.Id, bound))
                {
                    throw new InvalidOperationException($"The client already serves {methods[bound.Id].Name} (method id 0x{bound.Id:x8}); it cannot also serve {bound.Name}. Add each service once.");
                }
            }

            _methods = methods.ToFrozenDictionary();
        }
    }

    public bool TryGet(uint methodId, [NotNullWhen(true)] out ServerMethod? method) => _methods.TryGetValue(methodId, out method);
}
