using Microsoft.Extensions.Diagnostics.HealthChecks;

namespace Mux.Hosting.HealthChecks;

/// <summary>
/// Reports the hosted <see cref="MuxServer"/>: healthy while it accepts connections; the
/// registration's failure status before the host has started it, once it has stopped, or when its
/// accept loop has failed.
/// </summary>
internal sealed class MuxServerHealthCheck(MuxServerHolder holder) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        MuxServer? server = holder.Server;
        if (server is null)
        {
            return Task.FromResult(new HealthCheckResult(context.Registration.FailureStatus, "The Mux server has not started: the host starts it."));
        }

        string endPoint = server.LocalEndPoint?.ToString() ?? "?";
        var data = new Dictionary<string, object>
        {
            ["endPoint"] = endPoint,
            ["activeConnections"] = server.ActiveConnections,
            ["connectionsAccepted"] = server.ConnectionsAccepted,
        };
        HealthCheckResult result = server.IsListening
            ? HealthCheckResult.Healthy($"The Mux server is listening on {endPoint} with {server.ActiveConnections} connection(s) open.", data)
            : new HealthCheckResult(context.Registration.FailureStatus, $"The Mux server on {endPoint} is not accepting connections: it is stopping or stopped, or accepting failed (see the Mux.Server log).", data: data);
        return Task.FromResult(result);
    }
}
