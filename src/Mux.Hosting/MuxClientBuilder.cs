using System.Diagnostics.CodeAnalysis;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Mux.Hosting.HealthChecks;

namespace Mux.Hosting;

/// <summary>
/// Registers proxies of the shared Mux client that
/// <see cref="MuxServiceCollectionExtensions.AddMuxClient(IServiceCollection, Action{MuxClientOptions}?)"/>
/// registered. Returned by AddMuxClient; every call to AddMuxClient configures the same client.
/// </summary>
public sealed class MuxClientBuilder
{
    internal MuxClientBuilder(IServiceCollection services)
    {
        Services = services;
    }

    /// <summary>The service collection the client is registered in.</summary>
    public IServiceCollection Services { get; }

    /// <summary>
    /// Registers <typeparamref name="TService"/> as a singleton: a proxy, created with
    /// <see cref="MuxClient.CreateProxy{TService}()"/>, whose calls travel over the one shared
    /// connection. Inject it anywhere, also into services constructed before the host has started:
    /// its calls wait for the connection (within <see cref="MuxClientOptions.CallTimeout"/>).
    /// Adding the same proxy twice registers it once.
    /// </summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <returns>This builder, for chaining.</returns>
    public MuxClientBuilder AddProxy<TService>()
        where TService : class
    {
        // From the holder, not DI's MuxClient singleton: a thread that makes the client by resolving MuxClient holds DI's
        // lock on it while the client's services are made, and one of them may inject this proxy on another thread.
        Services.TryAddSingleton(static services => services.GetRequiredService<MuxClientHolder>().GetClient().CreateProxy<TService>());
        return this;
    }

    /// <summary>
    /// Serves <typeparamref name="TService"/> to the server through the shared client
    /// (<see cref="MuxClient.AddService{TService}(TService)"/>): the server's handlers can call it
    /// back on the client's connection (<see cref="MuxCallContext.GetClientProxy{TService}"/>).
    /// One <typeparamref name="TImplementation"/>, a DI singleton, serves every such call, so it
    /// must be thread-safe; it is resolved when the client is created (the host's start, or the
    /// first proxy resolved), and may itself inject the client's proxies. Adding the same service
    /// twice, with the same implementation, registers it once.
    /// </summary>
    /// <remarks>
    /// <para>
    /// The client connects while its services are made, and serves each from when it is added: a call the server makes to
    /// one before that fails (the client answers that it does not serve the method, which the server's handler gets as
    /// <see cref="MuxRemoteException"/>). Only calls that reach the server in that window can cause one: those a service
    /// makes through the client's proxies from its constructor, and those of another thread that resolved the client or a
    /// proxy meanwhile, which gets the client at once, as waiting for its services could deadlock. Calls made once the host
    /// has started (which makes the client) keep out of it.
    /// </para>
    /// <para>
    /// If <typeparamref name="TImplementation"/> cannot be made (its constructor, or one of its dependencies, throws), the
    /// resolve that creates the client (the host's start, or the first <see cref="MuxClient"/> or proxy resolved) fails
    /// with that exception, as it is, and the half-made client is closed: nothing stays connected. The next resolve tries
    /// again, as DI does for a singleton whose constructor threw; but if the client had been handed out meanwhile (a
    /// service made before injected its proxies, or another thread resolved it), DI keeps it bound to the closed client,
    /// so later creations fail with <see cref="InvalidOperationException"/> whose inner exception is the first failure.
    /// </para>
    /// </remarks>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <typeparam name="TImplementation">The implementation, resolved from DI (registered as a
    /// singleton unless registered already).</typeparam>
    /// <returns>This builder, for chaining.</returns>
    /// <exception cref="InvalidOperationException"><typeparamref name="TService"/> has already been
    /// added with another implementation.</exception>
    public MuxClientBuilder AddService<TService, [DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] TImplementation>()
        where TService : class
        where TImplementation : class, TService
    {
        foreach (ServiceDescriptor descriptor in Services)
        {
            if (descriptor.ImplementationInstance is MuxClientServiceRegistration registration && registration.ServiceType == typeof(TService))
            {
                return registration.ImplementationType == typeof(TImplementation)
                    ? this
                    : throw new InvalidOperationException(
                        $"{typeof(TService).FullName} is already served by {registration.ImplementationType.FullName}; the Mux client " +
                        $"serves each interface with one implementation, so it cannot also be {typeof(TImplementation).FullName}. " +
                        "Remove one of the AddService calls.");
            }
        }

        Services.TryAddSingleton<TImplementation>();
        Services.AddSingleton(new MuxClientServiceRegistration(
            typeof(TService),
            typeof(TImplementation),
            static (client, provider) => client.AddService<TService>(provider.GetRequiredService<TImplementation>())));
        return this;
    }

    /// <summary>
    /// Runs <typeparamref name="TInterceptor"/> around every call the shared client makes, through
    /// any of its proxies (see <see cref="IMuxClientInterceptor"/>), after the interceptors added
    /// before it (and after those the configure delegate put in
    /// <see cref="MuxClientOptions.Interceptors"/>): the first added is the outermost. It is a
    /// singleton of the service collection (registered here unless it is already), resolved once,
    /// when the client is created, with its dependencies by constructor injection; it serves every
    /// call concurrently, so it must be thread-safe, and it must not depend on the client or its
    /// proxies (the client needs it to exist). Adding the same type twice runs it twice.
    /// </summary>
    /// <typeparam name="TInterceptor">The interceptor's class.</typeparam>
    /// <returns>This builder, for chaining.</returns>
    public MuxClientBuilder AddInterceptor<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] TInterceptor>()
        where TInterceptor : class, IMuxClientInterceptor
    {
        Services.TryAddSingleton<TInterceptor>();
        Services.AddSingleton(new MuxInterceptorRegistration(typeof(TInterceptor), ForServer: false));
        Services.TryAddEnumerable(
            ServiceDescriptor.Singleton<Microsoft.Extensions.Options.IPostConfigureOptions<MuxClientOptions>, MuxInterceptorSetup>());
        return this;
    }

    /// <summary>
    /// Adds a health check (<c>Microsoft.Extensions.Diagnostics.HealthChecks</c>) that reports the
    /// shared connection: <see cref="HealthStatus.Healthy"/> while it is open, with its endpoint and
    /// pending calls; <paramref name="failureStatus"/> before the host has started the client, while
    /// it connects or reconnects, and once it has closed, with its state (<see cref="MuxClient.State"/>,
    /// in the result's data as <c>state</c>) and the reason its last connection closed
    /// (<see cref="MuxClient.CloseReason"/>, as <c>closeReason</c>).
    /// </summary>
    /// <param name="name">The check's name. Defaults to <c>"mux-client"</c>.</param>
    /// <param name="failureStatus">The status reported when the connection is not open. Defaults to
    /// <see langword="null"/>, which means <see cref="HealthStatus.Unhealthy"/>.</param>
    /// <param name="tags">Tags to filter checks by (readiness, liveness). Defaults to none.</param>
    /// <returns>This builder, for chaining.</returns>
    public MuxClientBuilder AddHealthCheck(string name = "mux-client", HealthStatus? failureStatus = null, IEnumerable<string>? tags = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        Services.AddHealthChecks().AddCheck<MuxClientHealthCheck>(name, failureStatus, tags ?? []);
        return this;
    }
}
