using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;

namespace Mux.Hosting.HealthChecks;

/// <summary>
/// Reports the hosted <see cref="MuxClient"/>: healthy while its connection is open; the
/// registration's failure status before the host has connected it, or once the connection has
/// closed, with the reason it closed (<see cref="MuxCloseReason"/>).
/// </summary>
internal sealed class MuxClientHealthCheck(MuxClientHolder holder, IOptions<MuxClientOptions> options) : IHealthCheck
{
    public Task<HealthCheckResult> CheckHealthAsync(HealthCheckContext context, CancellationToken cancellationToken = default)
    {
        MuxClient? client = holder.Client;
        if (client is null)
        {
            return Task.FromResult(new HealthCheckResult(context.Registration.FailureStatus, "The Mux client is not connected: the host connects it when it starts."));
        }

        string endPoint = (client.RemoteEndPoint ?? options.Value.EndPoint)?.ToString() ?? "?";
        MuxCloseReason reason = client.CloseReason;
        var data = new Dictionary<string, object>
        {
            ["endPoint"] = endPoint,
            ["pendingCalls"] = client.PendingCalls,
            ["closeReason"] = reason.ToString(),
        };
        HealthCheckResult result = client.IsConnected
            ? HealthCheckResult.Healthy($"The Mux client is connected to {endPoint} with {client.PendingCalls} call(s) pending.", data)
            : new HealthCheckResult(context.Registration.FailureStatus, $"The Mux client's connection to {endPoint} is closed: {reason}.", data: data);
        return Task.FromResult(result);
    }
}
