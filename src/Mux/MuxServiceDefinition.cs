using System.ComponentModel;
using Mux.Diagnostics;

namespace Mux;

/// <summary>
/// The methods of a service contract as the server dispatches them: id, name and handler per
/// method. Generated dispatchers build one per <see cref="MuxServiceAttribute"/> interface and
/// register it with <see cref="MuxServiceRegistry.RegisterService{TService}(MuxServiceDefinition{TService})"/>.
/// </summary>
/// <typeparam name="TService">The service contract.</typeparam>
[EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers build these; users never need to.
public sealed class MuxServiceDefinition<TService>
    where TService : class
{
    private readonly Dictionary<uint, MuxMethodDefinition<TService>> _methods = new();

    /// <summary>Creates an empty definition.</summary>
    /// <param name="serviceName">The contract's full name, for error messages and logs.</param>
    public MuxServiceDefinition(string serviceName)
    {
        ArgumentException.ThrowIfNullOrEmpty(serviceName);
        ServiceName = serviceName;
    }

    /// <summary>The contract's full name.</summary>
    public string ServiceName { get; }

    /// <summary>The methods, by id.</summary>
    public IReadOnlyDictionary<uint, MuxMethodDefinition<TService>> Methods => _methods;

    /// <summary>Adds a method.</summary>
    /// <param name="methodId">The method's wire id (a stable hash of its full name).</param>
    /// <param name="methodName">The method's name, for error messages and logs.</param>
    /// <param name="handler">Runs the method for one call.</param>
    /// <returns>This definition, for chaining.</returns>
    /// <exception cref="InvalidOperationException">Another method already has this id.</exception>
    public MuxServiceDefinition<TService> AddMethod(uint methodId, string methodName, MuxMethodHandler<TService> handler)
    {
        ArgumentException.ThrowIfNullOrEmpty(methodName);
        ArgumentNullException.ThrowIfNull(handler);
        if (_methods.TryGetValue(methodId, out MuxMethodDefinition<TService>? existing))
        {
            throw new InvalidOperationException(
                $"Methods '{existing.Name}' and '{methodName}' of {ServiceName} have the same id 0x{methodId:x8}. Rename one of them.");
        }

        _methods.Add(methodId, new MuxMethodDefinition<TService>(methodId, methodName, handler));
        MethodNames.Register(methodId, ServiceName, methodName);
        return this;
    }
}
