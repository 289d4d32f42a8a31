using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Mux.Hosting;

/// <summary>
/// Serves each call on a fresh <typeparamref name="TImplementation"/> resolved from a new DI scope, and disposes the scope
/// (with the instance and its scoped dependencies) once the handler's task has completed, after the response was sent.
/// </summary>
internal sealed class ScopedServiceActivator<TService, TImplementation>(IServiceScopeFactory scopeFactory, ILogger logger)
    : MuxServiceActivator<TService>
    where TService : class
    where TImplementation : class, TService
{
    private readonly IServiceScopeFactory _scopeFactory = scopeFactory;
    private readonly ILogger _logger = logger;

    public override async ValueTask InvokeAsync(MuxServerCall call, MuxMethodHandler<TService> handler)
    {
        AsyncServiceScope scope = _scopeFactory.CreateAsyncScope();
        try
        {
            TImplementation service = scope.ServiceProvider.GetRequiredService<TImplementation>();
            await handler(service, call).ConfigureAwait(false);
        }
        finally
        {
            // Not "await using": the caller already has its response (or the handler's exception, which must not be
            // replaced), so a failing Dispose is logged rather than thrown.
            try
            {
                await scope.DisposeAsync().ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                MuxHostingLog.ScopeDisposeFailed(_logger, call.MethodName, ex);
            }
        }
    }
}
