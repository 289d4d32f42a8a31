using System.Net;
using Mux.Transport;

namespace Mux.Client.Balancing;

/// <summary>The resolve loop: asks the <see cref="IMuxEndPointResolver"/> for the instances every
/// <see cref="MuxClientOptions.ResolveInterval"/>, soon after an instance's connection is lost, and
/// soon after the resolver signals a change (<see cref="IMuxEndPointResolver.WaitForChangeAsync"/>).
/// While no instance is known, an ask that fails or finds none is repeated on the reconnect backoff
/// instead: calls are waiting, and only the resolver can give them an instance.</summary>
internal sealed partial class EndPointBalancer
{
    // Completed by a keeper whose connection was lost, to have the loop resolve before the
    // interval ends; replaced by the loop each round. Read and completed by any thread.
    private volatile TaskCompletionSource _resolveNow = NewSignal();

    // Why the latest ask found no instance: the resolver's exception, or s_noInstanceFound when it
    // answered an empty list; null after an answer with instances (and before the first answer).
    // Written by the resolve loop; read by callers that give up waiting (for their message).
    private volatile Exception? _lastResolveFailure;

    // Stands for an empty answer in _lastResolveFailure (never thrown). Immutable.
    private static readonly Exception s_noInstanceFound = new InvalidOperationException("The resolver found no instance.");

    private async Task ResolveLoopAsync(IMuxEndPointResolver resolver)
    {
        CancellationToken stopping = Disposing.Token;
        // A lost connection asks for a resolve at once, but a flapping instance must not make the
        // loop hammer the resolver: at most one early round per ReconnectInitialDelay.
        TimeSpan earliest = Options.ReconnectInitialDelay;

        // Every wait of the loop is on the options' clock, so a test can count the rounds on a fake one.
        TimeProvider clock = Options.TimeProvider;

        // The waits between asks while no instance is known (grows while the resolver keeps failing,
        // starts over once it answers); used by this loop only.
        var backoff = new ReconnectBackoff(earliest, Options.ReconnectMaxDelay);
        await Task.Yield();
        while (!stopping.IsCancellationRequested)
        {
            Task early = _resolveNow.Task;
            try
            {
                IReadOnlyList<EndPoint> endPoints = await resolver.ResolveAsync(stopping).ConfigureAwait(false);
                for (int i = 0; i < endPoints.Count; i++)
                {
                    // Refused here: in Update, a null would fail it halfway, after it had started
                    // keepers for the instances before it that no set would hold, nor close.
                    if (endPoints[i] is null)
                    {
                        throw new InvalidOperationException($"The resolver's answer has a null endpoint (at index {i}).");
                    }
                }

                if (endPoints.Count == 0)
                {
                    _lastResolveFailure = s_noInstanceFound;
                    ClientLog.ResolvedNone(Logger, Name, _endPoints.Length);
                }
                else
                {
                    _lastResolveFailure = null;
                    backoff.Reset();
                    Update(endPoints);
                }
            }
            catch (Exception) when (stopping.IsCancellationRequested)
            {
                // Disposed. What the resolver threw as its ask was cancelled (an error of its own that
                // wraps the cancellation, say) is not a failure of the disposal, which goes on to
                // close every instance.
                return;
            }
            catch (Exception ex)
            {
                _lastResolveFailure = ex;
                ClientLog.ResolveFailed(Logger, Name, _endPoints.Length, ex);
            }

            // With instances known, a failed or empty ask changes nothing (they keep serving) and
            // the next comes a whole interval later, so a resolver that is down is not hammered.
            // With none, calls wait on the resolver alone: ask again soon, backing off the way
            // reconnects do, never less often than the interval.
            TimeSpan wait = _endPoints.Length == 0 && _lastResolveFailure is not null
                ? Min(backoff.NextDelay(), Options.ResolveInterval)
                : Options.ResolveInterval;
            using (var round = CancellationTokenSource.CreateLinkedTokenSource(stopping))
            {
                Task changed = WaitForChangeAsync(resolver, round.Token);
                await Task.WhenAny(early, changed, Task.Delay(wait, clock, round.Token)).ConfigureAwait(false);
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

    private static TimeSpan Min(TimeSpan a, TimeSpan b) => a < b ? a : b;

    /// <summary>Waits for the resolve loop to end once DisposeAsync has cancelled its token: at once
    /// with a resolver that honours the token; a resolver that ignores it is waited for at most
    /// ConnectTimeout (as long as the client gives an attempt to reach its server), so that it
    /// cannot hold up the disposal forever. What it answers later changes nothing.</summary>
    private async Task StopResolvingAsync()
    {
        try
        {
            await _resolveLoop.WaitAsync(Options.ConnectTimeout, Options.TimeProvider).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            // The loop stops with the client.
        }
        catch (TimeoutException)
        {
            ClientLog.ResolverIgnoredCancellation(Logger, Name, DurationText.Format(Options.ConnectTimeout));
        }
    }

    /// <summary>What a call that found no instance says about the resolver, when no instance is
    /// known: why its latest ask found none (the exception it threw is the call's inner exception).</summary>
    private string DescribeNoInstance(out Exception? resolverError)
    {
        Exception? failure = _lastResolveFailure;
        resolverError = failure == s_noInstanceFound ? null : failure;
        return failure switch
        {
            null => " No instance is known: the endpoint list or resolver gave none yet.",
            _ when failure == s_noInstanceFound => " No instance is known: the resolver has found none.",
            _ => $" No instance is known: resolving it failed: {failure.Message}",
        };
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
            ClientLog.ResolveFailed(Logger, Name, _endPoints.Length, ex);
        }

        await Task.Delay(Timeout.Infinite, cancellationToken).ConfigureAwait(false);
    }
}
