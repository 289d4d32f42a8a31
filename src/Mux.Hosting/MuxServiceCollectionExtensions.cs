using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.ServiceDiscovery;
using Mux;
using Mux.Hosting;
using Mux.Hosting.ServiceDiscovery;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Adds a Mux server or a Mux client, run by the host, to a service collection.</summary>
public static class MuxServiceCollectionExtensions
{
    /// <summary>
    /// Adds a Mux server that starts and stops with the host. Add the services it serves with
    /// <see cref="MuxServerBuilder.AddService{TService, TImplementation}(ServiceLifetime)"/>.
    /// </summary>
    /// <remarks>
    /// <para>
    /// Options: <see cref="MuxServerOptions"/> is bound from the <c>Mux:Server</c> configuration
    /// section when the service provider has an <c>IConfiguration</c> (keys <c>Listen</c> as
    /// <c>host:port</c>, for example <c>127.0.0.1:5000</c>, <c>[::1]:5000</c>, <c>0.0.0.0:5000</c>
    /// or <c>localhost:5000</c>; <c>MaxFrameSize</c>, <c>MaxConcurrentCallsPerConnection</c>,
    /// <c>HandshakeTimeout</c>, <c>ListenBacklog</c>, <c>AuthToken</c>); then
    /// <paramref name="configure"/> runs, so values set in code win. Keys that are missing keep the
    /// defaults documented on <see cref="MuxServerOptions"/>. <see cref="MuxConnectionOptions.LoggerFactory"/>
    /// defaults to the service provider's <c>ILoggerFactory</c>. The options are read once, when the
    /// host starts: a reloaded configuration changes nothing in the running server until the host
    /// starts again.
    /// </para>
    /// <para>
    /// Lifetime: the server is built and started when the host starts; invalid options fail the
    /// start with <see cref="InvalidOperationException"/> naming the option, and the configuration
    /// key and its value when the value refused came from one. When the host stops,
    /// the server sends GoAway and drains the calls in flight until the host's shutdown timeout
    /// (<c>HostOptions.ShutdownTimeout</c>, 30 seconds by default); calls still running then are
    /// cancelled. A start that fails halfway, or that the host stops (cancels) before it is done,
    /// leaves nothing listening: the start fails, with <see cref="OperationCanceledException"/> if
    /// the host stopped. A host disposed without stopping disposes the server first, which drains
    /// the calls in flight as a stop does (within <see cref="MuxServerOptions.ShutdownTimeout"/>),
    /// and only then the singletons that serve them.
    /// </para>
    /// <para>
    /// Once the host has started, the running <see cref="MuxServer"/> can be resolved from the
    /// service provider (for example to read <see cref="MuxServer.LocalEndPoint"/> after listening
    /// on port 0); resolving it earlier throws <see cref="InvalidOperationException"/>.
    /// </para>
    /// <para>Calling AddMuxServer more than once configures the same, single server.</para>
    /// </remarks>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">Sets options in code, after configuration binding. Defaults to
    /// <see langword="null"/> (configuration and defaults only).</param>
    /// <returns>A builder to add services with.</returns>
    public static MuxServerBuilder AddMuxServer(this IServiceCollection services, Action<MuxServerOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.AddOptions<MuxServerOptions>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IConfigureOptions<MuxServerOptions>, MuxServerOptionsSetup>());
        if (configure is not null)
        {
            services.Configure(configure);
        }

        services.TryAddSingleton<MuxServerHolder>();
        services.TryAddSingleton<MuxServerCloser>();
        services.TryAddSingleton(static provider => provider.GetRequiredService<MuxServerHolder>().GetStartedServer());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, MuxServerHostedService>());
        return new MuxServerBuilder(services);
    }

    /// <summary>
    /// Adds one shared <see cref="MuxClient"/> that connects when the host starts, reconnects when
    /// its connection is lost, and closes when the host stops. Register the interfaces to inject with
    /// <see cref="MuxClientBuilder.AddProxy{TService}"/>.
    /// </summary>
    /// <remarks>
    /// <para>
    /// Options: <see cref="MuxClientOptions"/> is bound from the <c>Mux:Client</c> configuration
    /// section when the service provider has an <c>IConfiguration</c> (keys <c>Connect</c> as
    /// <c>host:port</c>, for example <c>127.0.0.1:5000</c>, <c>[::1]:5000</c> or
    /// <c>users.internal:5000</c>; <c>CallTimeout</c>, <c>ConnectTimeout</c>, <c>MaxFrameSize</c>,
    /// <c>AuthToken</c>, <c>AutoReconnect</c>, <c>ReconnectInitialDelay</c>, <c>ReconnectMaxDelay</c>,
    /// <c>Service</c>, <c>ResolveInterval</c>); then <paramref name="configure"/> runs, so values set in code win. Keys
    /// that are missing keep the defaults documented on <see cref="MuxClientOptions"/>;
    /// <see cref="MuxClientOptions.EndPoint"/> has no default and must be set one way or the other,
    /// unless the client spreads its calls over several instances.
    /// <see cref="MuxConnectionOptions.LoggerFactory"/> defaults to the service provider's <c>ILoggerFactory</c>.
    /// The options are read once, when the client is made: a reloaded configuration changes nothing
    /// in the running client until the host starts again (the instances behind <c>Service</c>
    /// excepted: service discovery follows reloads, below). Invalid options fail the client's
    /// creation with <see cref="InvalidOperationException"/> naming the option, and the
    /// configuration key and its value when the value refused came from one.
    /// </para>
    /// <para>
    /// Several instances: set <see cref="MuxClientOptions.Service"/> (or the key <c>Service</c>) to
    /// <c>mux://NAME</c> for plaintext instances or <c>muxs://NAME</c> for TLS ones (the target host
    /// defaults to NAME). The client finds the instances through Microsoft.Extensions.ServiceDiscovery
    /// (registered here with its configuration and pass-through providers, unless the application
    /// registered it already): with the configuration provider, list them as
    /// <c>Services:NAME:mux:0 = 10.0.0.5:5000</c>, <c>Services:NAME:mux:1 = ...</c> (<c>muxs</c> for
    /// TLS). It asks again as soon as service discovery reports a change (a reloaded configuration
    /// section), every <see cref="MuxClientOptions.ResolveInterval"/> (key
    /// <c>ResolveInterval</c>, 30 seconds by default) and when a connection is lost, connects to new
    /// instances and drains removed ones; see <see cref="MuxServiceEndPointResolver"/>.
    /// </para>
    /// <para>
    /// Lifetime: the client starts connecting when the host starts (or when it or a proxy is first
    /// resolved, if that is earlier) and does not wait for the server: a host whose server is not up
    /// yet starts anyway, and calls wait for the connection within
    /// <see cref="MuxClientOptions.CallTimeout"/>. A lost connection is re-established with backoff
    /// (<see cref="MuxClientOptions.AutoReconnect"/>); the client logs each change in the
    /// <c>Mux.Client</c> category and reports it through <see cref="MuxClient.StateChanged"/>.
    /// The client is disposed when the host stops; a host stopped while it is still starting makes
    /// no client (its start fails with <see cref="ObjectDisposedException"/>), and closes one that
    /// was being made. A service provider disposed while the client is open (one built without a
    /// host, or a host disposed without stopping) closes the client before it disposes the services
    /// the client serves (<see cref="MuxClientBuilder.AddService{TService, TImplementation}"/>), so
    /// that no call from the server reaches a disposed one; disposed synchronously, it waits for the
    /// close.
    /// </para>
    /// <para>Calling AddMuxClient more than once configures the same, single connection. In a host
    /// that also runs the server the client connects to, call AddMuxServer first: hosted services
    /// start in registration order.</para>
    /// </remarks>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">Sets options in code, after configuration binding. Defaults to
    /// <see langword="null"/> (configuration and defaults only).</param>
    /// <returns>A builder to register proxies with.</returns>
    public static MuxClientBuilder AddMuxClient(this IServiceCollection services, Action<MuxClientOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.AddOptions<MuxClientOptions>();
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IConfigureOptions<MuxClientOptions>, MuxClientOptionsSetup>());
        if (configure is not null)
        {
            services.Configure(configure);
        }

        AddServiceDiscoveryOnce(services);
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IPostConfigureOptions<MuxClientOptions>, MuxClientServiceSetup>());
        services.TryAddSingleton<MuxClientHolder>();
        services.TryAddSingleton<MuxClientCloser>();
        services.TryAddSingleton(static provider => provider.GetRequiredService<MuxClientHolder>().GetClient());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, MuxClientHostedService>());
        return new MuxClientBuilder(services);
    }

    // MuxClientOptions.Service resolves through the host's service discovery: the one the application
    // registered (with its DNS or other providers), else the default one (configuration, pass-through).
    private static void AddServiceDiscoveryOnce(IServiceCollection services)
    {
        foreach (ServiceDescriptor descriptor in services)
        {
            if (descriptor.ServiceType == typeof(ServiceEndpointResolver))
            {
                return;
            }
        }

        services.AddServiceDiscovery();
    }
}
