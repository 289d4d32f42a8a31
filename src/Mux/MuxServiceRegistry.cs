using System.ComponentModel;
using Mux.Diagnostics;

namespace Mux;

/// <summary>
/// Where generated module initializers register the proxy factory and server definition of each
/// <see cref="MuxServiceAttribute"/> interface, so no reflection is needed at run time. Users never call it.
/// </summary>
[EditorBrowsable(EditorBrowsableState.Never)]
public static class MuxServiceRegistry
{
    /// <summary>Registers how to create a client proxy for <typeparamref name="TService"/>.</summary>
    /// <typeparam name="TService">The service contract.</typeparam>
    /// <param name="factory">Creates a proxy that sends calls through the given invoker: a
    /// <see cref="MuxClient"/>, or a <see cref="MuxRemoteClient"/> for calls from server to client.</param>
    public static void RegisterProxy<TService>(Func<IMuxCallInvoker, TService> factory)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(factory);
        Registration<TService>.ProxyFactory = factory;
    }

    /// <summary>Registers how a server dispatches calls to <typeparamref name="TService"/>.</summary>
    /// <typeparam name="TService">The service contract.</typeparam>
    /// <param name="definition">The service's methods.</param>
    public static void RegisterService<TService>(MuxServiceDefinition<TService> definition)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(definition);
        Registration<TService>.Definition = definition;
    }

    /// <summary>"IService.Method" for messages when a contract with this method id is loaded in the process; otherwise
    /// "method 0x…", as the id is all the wire carries.</summary>
    internal static string GetMethodDisplayName(uint methodId) =>
        MethodNames.TryGet(methodId, out MethodTelemetryName? name) ? name.DisplayName : $"method 0x{methodId:x8}";

    /// <summary>Messages say "IUserService.Add".</summary>

    internal static string ShortServiceName(string serviceName)
    {
        int dot = serviceName.LastIndexOf('.');
        return dot < 0 ? serviceName : serviceName[(dot + 1)..];
    }

    internal static TService CreateProxy<TService>(IMuxCallInvoker client)
        where TService : class
        => (Registration<TService>.ProxyFactory ?? throw NotRegistered(typeof(TService)))(client);

    internal static MuxServiceDefinition<TService> GetDefinition<TService>()
        where TService : class
        => Registration<TService>.Definition ?? throw NotRegistered(typeof(TService));

    private static InvalidOperationException NotRegistered(Type service) =>
        new($"No Mux proxy or dispatcher is registered for {service.FullName}. " +
            "Mark the interface with [MuxService] in a project that references the Mux package, so that Mux generates them.");

    private static class Registration<TService>
        where TService : class
    {
        // Written by module initializers (before any user code runs) and read on each lookup.
        public static volatile Func<IMuxCallInvoker, TService>? ProxyFactory;
        public static volatile MuxServiceDefinition<TService>? Definition;
    }
}
