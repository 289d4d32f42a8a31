using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Mux.Hosting;

/// <summary>One <see cref="MuxServerBuilder.AddService{TService, TImplementation}(ServiceLifetime)"/> registration, kept
/// in the service collection as a singleton instance; the server's hosted service applies them all at start.</summary>
internal abstract class MuxServiceBinding
{
    public abstract Type ServiceType { get; }

    public abstract Type ImplementationType { get; }

    /// <summary>Adds the service to <paramref name="server"/>, which has not started yet.</summary>
    public abstract void AddTo(MuxServer server, IServiceProvider services, ILogger logger);
}

/// <inheritdoc />
internal sealed class MuxServiceBinding<TService, TImplementation>(ServiceLifetime lifetime) : MuxServiceBinding
    where TService : class
    where TImplementation : class, TService
{
    public override Type ServiceType => typeof(TService);

    public override Type ImplementationType => typeof(TImplementation);

    public override void AddTo(MuxServer server, IServiceProvider services, ILogger logger)
    {
        if (lifetime == ServiceLifetime.Singleton)
        {
            // One shared, thread-safe instance: no scope per call.
            server.AddService<TService>(services.GetRequiredService<TImplementation>());
        }
        else
        {
            server.AddService<TService>(
                new ScopedServiceActivator<TService, TImplementation>(services.GetRequiredService<IServiceScopeFactory>(), logger));
        }
    }
}
