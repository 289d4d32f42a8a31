using System.Diagnostics.CodeAnalysis;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Diagnostics.HealthChecks;
using Mux.Hosting.HealthChecks;

namespace Mux.Hosting;

/// <summary>
/// Adds services to the Mux server that
/// <see cref="MuxServiceCollectionExtensions.AddMuxServer(IServiceCollection, Action{MuxServerOptions}?)"/>
/// registered. Returned by AddMuxServer; every call to AddMuxServer configures the same server.
/// </summary>
public sealed class MuxServerBuilder
{
    internal MuxServerBuilder(IServiceCollection services)
    {
        Services = services;
    }

    /// <summary>The service collection the server is registered in.</summary>
    public IServiceCollection Services { get; }

    /// <summary>
    /// Serves <typeparamref name="TService"/> with <typeparamref name="TImplementation"/>, which
    /// is registered in the service collection with <paramref name="lifetime"/> (unless
    /// <typeparamref name="TImplementation"/> is registered already, in which case that registration
    /// is used) and gets its dependencies by constructor injection.
    /// </summary>
    /// <remarks>
    /// <para>
    /// <see cref="ServiceLifetime.Scoped"/> (the default) and <see cref="ServiceLifetime.Transient"/>
    /// give every call its own dependency-injection scope and its own instance, like ASP.NET Core
    /// controllers and gRPC services: the calls of a connection run concurrently, so per-call
    /// instances need no thread-safety, and scoped dependencies (a DbContext, a unit of work) are
    /// never shared between calls. The scope, with the instance and every scoped or transient
    /// dependency it resolved, is disposed when the call's handler has completed (after its
    /// response has been sent).
    /// </para>
    /// <para>
    /// <see cref="ServiceLifetime.Singleton"/> resolves one instance when the host starts and serves
    /// every call with it, without a scope per call (faster). That instance runs many calls at
    /// once, so it must be thread-safe, and it must not depend on scoped services.
    /// </para>
    /// </remarks>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <typeparam name="TImplementation">The class that implements it.</typeparam>
    /// <param name="lifetime">How instances are shared between calls. Defaults to
    /// <see cref="ServiceLifetime.Scoped"/>: one instance and one scope per call.</param>
    /// <returns>This builder, for chaining.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="lifetime"/> is not a defined value.</exception>
    /// <exception cref="InvalidOperationException"><typeparamref name="TService"/> has already been added.</exception>
    public MuxServerBuilder AddService<TService, [DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] TImplementation>(
        ServiceLifetime lifetime = ServiceLifetime.Scoped)
        where TService : class
        where TImplementation : class, TService
    {
        if (lifetime is not (ServiceLifetime.Singleton or ServiceLifetime.Scoped or ServiceLifetime.Transient))
        {
            throw new ArgumentOutOfRangeException(nameof(lifetime), lifetime, "The lifetime must be Singleton, Scoped or Transient.");
        }

        foreach (ServiceDescriptor descriptor in Services)
        {
            if (descriptor.ServiceType == typeof(MuxServiceBinding)
                && descriptor.ImplementationInstance is MuxServiceBinding existing
                && existing.ServiceType == typeof(TService))
            {
                throw new InvalidOperationException(
                    $"{typeof(TService).FullName} is already served by {existing.ImplementationType.FullName}; " +
                    "a Mux server serves each interface with one implementation. Remove one of the AddService calls.");
            }
        }

        Services.TryAdd(new ServiceDescriptor(typeof(TImplementation), typeof(TImplementation), lifetime));
        Services.AddSingleton<MuxServiceBinding>(new MuxServiceBinding<TService, TImplementation>(lifetime));
        return this;
    }

    /// <summary>
    /// Runs <typeparamref name="TInterceptor"/> around every call the server serves (see
    /// <see cref="IMuxServerInterceptor"/>), after the interceptors added before it (and after those
    /// the configure delegate put in <see cref="MuxServerOptions.Interceptors"/>): the first added is
    /// the outermost. It is a singleton of the service collection (registered here unless it is
    /// already), resolved once, when the server is created, with its dependencies by constructor
    /// injection; it serves every call concurrently, so it must be thread-safe. For per-call
    /// dependencies, inject <see cref="IServiceScopeFactory"/> and make a scope in
    /// <see cref="IMuxServerInterceptor.InvokeAsync"/>. Adding the same type twice runs it twice.
    /// </summary>
    /// <typeparam name="TInterceptor">The interceptor's class.</typeparam>
    /// <returns>This builder, for chaining.</returns>
    public MuxServerBuilder AddInterceptor<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] TInterceptor>()
        where TInterceptor : class, IMuxServerInterceptor
    {
        Services.TryAddSingleton<TInterceptor>();
        Services.AddSingleton(new MuxInterceptorRegistration(typeof(TInterceptor), ForServer: true));
        Services.TryAddEnumerable(
            ServiceDescriptor.Singleton<Microsoft.Extensions.Options.IPostConfigureOptions<MuxServerOptions>, MuxInterceptorSetup>());
        return this;
    }

    /// <summary>
    /// Adds a health check (<c>Microsoft.Extensions.Diagnostics.HealthChecks</c>) that reports the
    /// server: <see cref="HealthStatus.Healthy"/> while it accepts connections, with its endpoint and
    /// open connections; <paramref name="failureStatus"/> before the host has started it, once it has
    /// stopped, or when accepting failed. Serve the results with, for example, ASP.NET Core's
    /// <c>MapHealthChecks</c>, or read them from <see cref="HealthCheckService"/>.
    /// </summary>
    /// <param name="name">The check's name. Defaults to <c>"mux-server"</c>.</param>
    /// <param name="failureStatus">The status reported when the server is not accepting connections.
    /// Defaults to <see langword="null"/>, which means <see cref="HealthStatus.Unhealthy"/>.</param>
    /// <param name="tags">Tags to filter checks by (readiness, liveness). Defaults to none.</param>
    /// <returns>This builder, for chaining.</returns>
    public MuxServerBuilder AddHealthCheck(string name = "mux-server", HealthStatus? failureStatus = null, IEnumerable<string>? tags = null)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        Services.AddHealthChecks().AddCheck<MuxServerHealthCheck>(name, failureStatus, tags ?? []);
        return this;
    }
}
