using System.Net;

namespace Mux.Client.Balancing;

/// <summary>The resolve loop: asks the <see cref="IMuxEndPointResolver"/> for the instances every
/// <see cref="MuxClientOptions.ResolveInterval"/>, and soon after an instance's connection is lost.</summary>
internal sealed partial class EndPointBalancer
{
    // Completed by a keeper whose connection was lost, to have the loop resolve before the
    // interval ends; replaced by the loop each round. Read and completed by any thread.
    private volatile TaskCompletionSource _resolveNow = NewSignal();

    private async Task ResolveLoopAsync(IMuxEndPointResolver resolver)
    {
        CancellationToken stopping = _disposing.Token;
        // A lost connection asks for a resolve at once, but a flapping instance must not make the
        // loop hammer the resolver: at most one early round per ReconnectInitialDelay.
        TimeSpan earliest = _options.ReconnectInitialDelay;
        await Task.Yield();
        while (!stopping.IsCancellationRequested)
        {
            Task early = _resolveNow.Task;
            try
            {
                IReadOnlyList<EndPoint> endPoints = await resolver.ResolveAsync(stopping).ConfigureAwait(false);
                if (endPoints.Count == 0)
                {
                    BalancingLog.ResolvedNone(_logger, _name, _endPoints.Length);
                }
                else
                {
                    Update(endPoints);
                }
            }
            catch (Exception ex) when (!stopping.IsCancellationRequested)
            {
                BalancingLog.ResolveFailed(_logger, _name, _endPoints.Length, ex);
            }

            await Task.WhenAny(early, Task.Delay(_options.ResolveInterval, stopping)).ConfigureAwait(false);
            if (early.IsCompleted)
            {
                _resolveNow = NewSignal();
                await Task.Delay(earliest, stopping).ConfigureAwait(false);
            }
        }
    }
}
