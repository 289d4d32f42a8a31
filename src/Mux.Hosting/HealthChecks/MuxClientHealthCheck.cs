using Microsoft.Extensions.Diagnostics.HealthChecks;
using Microsoft.Extensions.Options;

namespace Mux.Hosting.HealthChecks;

/// <summary>
/// Reports the hosted <see cref="MuxClient"/>: healthy while it is connected; the registration's
/// failure status before the host has started it, while it (re)connects, and once it has closed,
/// with its state and the reason its last connection closed (<see cref="MuxCloseReason"/>).
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

        string endPoint = MuxClientHolder.Describe(client, options.Value);
        MuxClientState state = client.State;
        MuxCloseReason reason = client.CloseReason;
        var data = new Dictionary<string, object>
        {
            ["endPoint"] = endPoint,
            ["state"] = state.ToString(),
            ["pendingCalls"] = client.PendingCalls,
            ["closeReason"] = reason.ToString(),
        };
        HealthCheckResult result = client.IsConnected
            ? HealthCheckResult.Healthy($"The Mux client is connected to {endPoint} with {client.PendingCalls} call(s) pending.", data)
            : new HealthCheckResult(context.Registration.FailureStatus, $"The Mux client is not connected to {endPoint} ({state}); its last connection closed: {reason}.", data: data);
        return Task.FromResult(result);
    }
}
