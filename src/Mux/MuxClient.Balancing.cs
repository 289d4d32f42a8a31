using Mux.Client;
using Mux.Client.Balancing;

namespace Mux;

/// <summary>A client over several instances of one server (<see cref="MuxClientOptions.EndPoints"/>,
/// <see cref="MuxClientOptions.EndPointResolver"/>): one connection per instance, see
/// <see cref="EndPointBalancer"/>.</summary>
public sealed partial class MuxClient
{
    private static MuxClient CreateBalanced(MuxClientOptions options)
    {
        options.Validate();
        var logger = CreateLogger(options);
        return new MuxClient(client => EndPointBalancer.Start(options, logger, client.OnStateChanged, client._services), options, null);
    }

    private static async Task<MuxClient> ConnectBalancedAsync(MuxClientOptions options, CancellationToken cancellationToken)
    {
        MuxClient client = CreateBalanced(options);
        try
        {
            long deadline = ClockDeadline.After(options.TimeProvider, options.ConnectTimeout);
            await ((EndPointBalancer)client._keeper).WaitUntilConnectedAsync(deadline, cancellationToken).ConfigureAwait(false);
            return client;
        }
        catch
        {
            await client.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// What the client knows about each server instance it spreads calls over: its state, calls
    /// pending on it, calls sent to it. For diagnostics; cheap, but allocates the list.
    /// </summary>
    /// <returns>One entry per instance in use, in no particular order; empty for a client over one
    /// <see cref="MuxClientOptions.EndPoint"/> (see <see cref="State"/> and <see cref="PendingCalls"/>).</returns>
    public IReadOnlyList<MuxEndPointStatistics> GetEndPointStatistics()
    {
        if (_keeper is EndPointBalancer balancer)
        {
            IReadOnlyList<BalancedEndPoint> endPoints = balancer.EndPoints;
            var statistics = new MuxEndPointStatistics[endPoints.Count];
            for (int i = 0; i < statistics.Length; i++)
            {
                statistics[i] = endPoints[i].GetStatistics();
            }

            return statistics;
        }

        return [];
    }
}
