using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;

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
    /// connection. Inject it anywhere after the host has started; resolving it before (for example
    /// in the constructor of a hosted service, which runs while the host starts) throws
    /// <see cref="InvalidOperationException"/>. Adding the same proxy twice registers it once.
    /// </summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <returns>This builder, for chaining.</returns>
    public MuxClientBuilder AddProxy<TService>()
        where TService : class
    {
        Services.TryAddSingleton(static services => services.GetRequiredService<MuxClient>().CreateProxy<TService>());
        return this;
    }
}
