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
    /// <see cref="MuxClient.CreateProxy{TService}"/>, whose calls travel over the one shared
    /// connection. Inject it anywhere, also into services constructed before the host has started:
    /// its calls wait for the connection (within <see cref="MuxClientOptions.CallTimeout"/>).
    /// Adding the same proxy twice registers it once.
    /// </summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <returns>This builder, for chaining.</returns>
    public MuxClientBuilder AddProxy<TService>()
        where TService : class
    {
        Services.TryAddSingleton(static services => services.GetRequiredService<MuxClient>().CreateProxy<TService>());
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
