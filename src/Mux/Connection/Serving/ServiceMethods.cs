using System.Collections.Frozen;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Connection;

/// <summary>The methods a side serves, by id. Read without a lock by every connection's reader loop; each addition replaces
/// the frozen table whole under a lock, so a connection already running sees services added later.</summary>
internal sealed class ServiceMethods
{
    private readonly Lock _lock = new();

    // Methods by id. Replaced whole under _lock by Add; read without it.
    private volatile FrozenDictionary<uint, ServiceMethod> _methods = FrozenDictionary<uint, ServiceMethod>.Empty;

    /// <summary>Adds every method of <typeparamref name="TService"/>, or none: a taken id throws describeDuplicate's message.</summary>
    public void Add<TService>(
        Func<string, MuxMethodDefinition<TService>, ServiceMethod> bind, Func<ServiceMethod, ServiceMethod, string> describeDuplicate)
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
