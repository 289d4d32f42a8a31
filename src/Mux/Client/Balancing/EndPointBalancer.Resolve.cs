using System.Net;
using Mux.Transport;

namespace Mux.Client.Balancing;

/// <summary>The resolve loop: asks the <see cref="IMuxEndPointResolver"/> every <see cref="MuxClientOptions.ResolveInterval"/>, and soon
/// after a connection is lost or the resolver signals a change. While no instance is known it asks on the reconnect backoff instead: calls
/// are waiting, and only the resolver can give them an instance.</summary>
internal sealed partial class EndPointBalancer
{
    // Completed by any keeper whose connection was lost, to resolve before the interval ends; replaced by the loop.
    private volatile TaskCompletionSource _resolveNow = NewSignal();

    // Written by the resolve loop, read by callers giving up: why the latest ask found none (its exception, or s_noInstanceFound).
    private volatile Exception? _lastResolveFailure;

    // Stands for an empty answer in _lastResolveFailure (never thrown).
    private static readonly Exception s_noInstanceFound = new InvalidOperationException("The resolver found no instance.");

    private async Task ResolveLoopAsync(IMuxEndPointResolver resolver)
    {
        CancellationToken stopping = Disposing.Token;
        // A lost connection asks for a resolve at once, but a flapping instance must not make the loop hammer the resolver: at most one
        // early round per ReconnectInitialDelay.
        TimeSpan earliest = Options.ReconnectInitialDelay;
        TimeProvider clock = Options.TimeProvider;

        // Paces the asks while no instance is known; starts over once the resolver answers.
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
                    // Refused here: in Update, a null would fail it halfway, after it had started keepers for the instances before it that
                    // no set would hold, nor close.
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
                // Disposed: whatever the resolver threw for the cancelled ask is not a failure of the disposal, which goes on to close
                // every instance.
                return;
            }
            catch (Exception ex)
            {
                _lastResolveFailure = ex;
                ClientLog.ResolveFailed(Logger, Name, _endPoints.Length, ex);
            }

            // With instances known, a failed or empty ask changes nothing and the next waits a whole interval, so a resolver that is down
            // is not hammered. With none, calls wait on the resolver alone: ask on the backoff.
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

    /// <summary>Waits for the cancelled resolve loop to end, but for a resolver that ignores the token at most ConnectTimeout, so that it
    /// cannot hold up the disposal forever.</summary>
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

    /// <summary>Why the resolver's latest ask found no instance, for the message of a call that found none; what the resolver threw becomes
    /// the call's inner exception.</summary>
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

    /// <summary>Completes only on a change: a failed wait falls back to the interval, and is observed here.</summary>
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
