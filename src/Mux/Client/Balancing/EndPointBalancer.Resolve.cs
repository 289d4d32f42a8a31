using System.Net;

namespace Mux.Client.Balancing;

/// <summary>The resolve loop: asks the <see cref="IMuxEndPointResolver"/> for the instances every
/// <see cref="MuxClientOptions.ResolveInterval"/>, soon after an instance's connection is lost, and
/// soon after the resolver signals a change (<see cref="IMuxEndPointResolver.WaitForChangeAsync"/>).</summary>
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

        // Every wait of the loop is on the options' clock, so a test can count the rounds on a fake one.
        TimeProvider clock = _options.TimeProvider;
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

            using (var round = CancellationTokenSource.CreateLinkedTokenSource(stopping))
            {
                Task changed = WaitForChangeAsync(resolver, round.Token);
                await Task.WhenAny(early, changed, Task.Delay(_options.ResolveInterval, clock, round.Token)).ConfigureAwait(false);
                round.Cancel();
                if (early.IsCompleted || changed.IsCompletedSuccessfully)
                {
                    if (early.IsCompleted)
                    {
                        _resolveNow = NewSignal();
                    }

                    await Task.Delay(earliest, clock, stopping).ConfigureAwait(false);
                }
            }
        }
    }

    /// <summary>The resolver's change signal; completes only on a change (a failed or cancelled
    /// wait falls back to the period, and is observed here so that it is never unobserved).</summary>
    private async Task WaitForChangeAsync(IMuxEndPointResolver resolver, CancellationToken cancellationToken)
    {
        try
        {
            await resolver.WaitForChangeAsync(cancellationToken).ConfigureAwait(false);
            return;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (Exception ex)
        {
            BalancingLog.ResolveFailed(_logger, _name, _endPoints.Length, ex);
        }

        await Task.Delay(Timeout.Infinite, cancellationToken).ConfigureAwait(false);
    }
}
