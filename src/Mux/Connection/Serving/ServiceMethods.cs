using System.Collections.Frozen;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Connection;

/// <summary>
/// The methods a side serves, by method id: a server's services, or the services a client serves
/// to its server (MuxClient.AddService). Read without a lock by the reader loops of every
/// connection that serves them; added to under a lock (rare, at set-up), each addition replacing
/// the frozen table whole, so that a connection already running sees services added later.
/// </summary>
internal sealed class ServiceMethods
{
    private readonly Lock _lock = new();

    // Methods by id. Replaced whole under _lock by Add; read without it.
    private volatile FrozenDictionary<uint, ServiceMethod> _methods = FrozenDictionary<uint, ServiceMethod>.Empty;

    /// <summary>Binds every method of <typeparamref name="TService"/> with <paramref name="bind"/>
    /// and adds them all, or none: a method whose id is taken throws with
    /// <paramref name="describeDuplicate"/>'s message (the method there, the one added).</summary>
    public void Add<TService>(Func<string, MuxMethodDefinition<TService>, ServiceMethod> bind, Func<ServiceMethod, ServiceMethod, string> describeDuplicate)
        where TService : class
    {
        MuxServiceDefinition<TService> definition = MuxServiceRegistry.GetDefinition<TService>();
        lock (_lock)
        {
            var methods = new Dictionary<uint, ServiceMethod>(_methods);
            foreach (MuxMethodDefinition<TService> method in definition.Methods.Values)
            {
                ServiceMethod bound = bind(definition.ServiceName, method);
                if (!methods.TryAdd(bound.Id, bound))
                {
                    throw new InvalidOperationException(describeDuplicate(methods[bound.Id], bound));
                }
            }

            _methods = methods.ToFrozenDictionary();
        }
    }

    public bool TryGet(uint methodId, [NotNullWhen(true)] out ServiceMethod? method) => _methods.TryGetValue(methodId, out method);
}
