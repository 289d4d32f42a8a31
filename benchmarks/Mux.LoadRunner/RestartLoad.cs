using System.Diagnostics;

namespace Mux.LoadRunner;

/// <summary>
/// The callers of a restart measurement: a closed loop on one client that counts successes and
/// failures by kind, and reports the first call that succeeds after <see cref="ArmFirstSuccess"/>
/// (the restarted server's first answer). A failed caller pauses briefly before its next call:
/// the client already holds calls until it has reconnected, the pause only keeps a caller from
/// spinning should a call ever fail at once.
/// </summary>
internal sealed class RestartLoad
{
    private static readonly TimeSpan PauseAfterFailure = TimeSpan.FromMilliseconds(10);

    private readonly IBenchClient _client;
    private readonly Task[] _callers;
    private readonly CancellationTokenSource _stop = new();

    // Counters incremented by the callers with Interlocked; read by the measurement between cycles.
    private long _calls;
    private long _connectionErrors;
    private long _timeoutErrors;
    private long _otherErrors;
    private string? _firstError;

    // Replaced by ArmFirstSuccess (measurement thread); completed with a Stopwatch timestamp by
    // the first caller to succeed after that.
    private volatile TaskCompletionSource<long>? _firstSuccess;

    public RestartLoad(IBenchClient client, int callers)
    {
        _client = client;
        _callers = new Task[callers];
        for (int i = 0; i < callers; i++)
        {
            _callers[i] = CallerAsync(i);
        }
    }

    public long Calls => Interlocked.Read(ref _calls);

    public ErrorSnapshot Errors => new(Interlocked.Read(ref _connectionErrors), Interlocked.Read(ref _timeoutErrors), Interlocked.Read(ref _otherErrors));

    public string? FirstError => Volatile.Read(ref _firstError);

    /// <summary>From now on, the next successful call completes the returned task with its
    /// <see cref="Stopwatch"/> timestamp. Arm it while no server is up, so that the success can
    /// only come from the next one.</summary>
    public Task<long> ArmFirstSuccess()
    {
        var next = new TaskCompletionSource<long>(TaskCreationOptions.RunContinuationsAsynchronously);
        _firstSuccess = next;
        return next.Task;
    }

    public async Task StopAsync(TimeSpan timeout)
    {
        _stop.Cancel();
        await Task.WhenAll(_callers).WaitAsync(timeout);
    }

    private async Task CallerAsync(int index)
    {
        await Task.Yield();
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                await _client.CallAsync(index);
                Interlocked.Increment(ref _calls);
                _firstSuccess?.TrySetResult(Stopwatch.GetTimestamp());
            }
            catch (Exception ex)
            {
                switch (ex)
                {
                    case MuxConnectionException:
                        Interlocked.Increment(ref _connectionErrors);
                        break;
                    case TimeoutException:
                        Interlocked.Increment(ref _timeoutErrors);
                        break;
                    default:
                        Interlocked.Increment(ref _otherErrors);
                        break;
                }

                Interlocked.CompareExchange(ref _firstError, $"{ex.GetType().Name}: {ex.Message}", null);
                await Task.Delay(PauseAfterFailure, _stop.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            }
        }
    }
}

/// <summary>Failed calls by kind at one moment.</summary>
internal readonly record struct ErrorSnapshot(long Connection, long Timeout, long Other)
{
    public long Total => Connection + Timeout + Other;

    public static ErrorSnapshot operator -(ErrorSnapshot end, ErrorSnapshot start) =>
        new(end.Connection - start.Connection, end.Timeout - start.Timeout, end.Other - start.Other);

    public override string ToString() => $"{Total} (connection {Connection}, timeout {Timeout}, other {Other})";
}
