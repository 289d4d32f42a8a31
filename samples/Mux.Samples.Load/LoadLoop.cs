using System.Diagnostics;
using Mux.Samples.Contracts;

namespace Mux.Samples.Load;

/// <summary>
/// Closed-loop load: each caller awaits its call, then makes the next, until stopped. A failed
/// call is counted by kind (<see cref="ErrorCounts"/>) and the caller goes on, so the load
/// survives a server restart: calls that were in flight fail with
/// <see cref="MuxConnectionException"/>, the next calls wait inside the client until it has
/// reconnected, and then succeed again without anything done here.
/// </summary>
internal sealed class LoadLoop
{
    // Each caller's completed-call count lives on its own cache line (stride of 16 longs) so that
    // counting does not make 500 cores fight over one line.
    private const int Stride = 16;

    // A caller waits this long after its first failure in a row, doubling up to MaxPause. The
    // client already holds new calls until it has reconnected, so this only matters when calls
    // fail at once without waiting (a closed client, a server that refuses every call): then
    // the callers slow down instead of spinning through millions of instant errors.
    private static readonly TimeSpan FirstPause = TimeSpan.FromMilliseconds(10);
    private static readonly TimeSpan MaxPause = TimeSpan.FromMilliseconds(500);

    // How long StopAsync lets calls in flight finish before it closes the client: a call waiting
    // for a server that is down would otherwise wait out its whole CallTimeout (30 s by default).
    private static readonly TimeSpan StopGrace = TimeSpan.FromSeconds(2);

    private readonly MuxClient _client;
    private readonly Func<ValueTask> _call;

    // Written by caller i only (slot i * Stride), read by Calls from the progress loop.
    private readonly long[] _counts;

    // One per caller, written by that caller only; merged after every caller has ended.
    private readonly LatencyHistogram[] _histograms;

    private readonly CancellationTokenSource _stop = new();
    private readonly Stopwatch _clock = new();
    private Task[] _callers = [];

    // Set by StopAsync before it closes the client: the failures that follow are its own doing,
    // not the server's, and are not counted.
    private volatile bool _closedByStop;

    // Incremented by the client's StateChanged handler (a background thread).
    private int _reconnects;

    private LoadLoop(MuxClient client, IUserService users, string method, int callers)
    {
        _client = client;
        _call = method switch
        {
            "add" => async () =>
            {
                if (await users.Add(1, 2) != 3)
                {
                    throw new InvalidOperationException("Add(1, 2) did not return 3.");
                }
            },
            "list100" => async () => CheckList(await users.List(100), 100),
            _ => async () => CheckList(await users.List(1), 1),
        };
        _counts = new long[callers * Stride];
        _histograms = new LatencyHistogram[callers];
    }

    public ErrorCounts Errors { get; } = new();

    /// <summary>Successful calls so far.</summary>
    public long Calls
    {
        get
        {
            long total = 0;
            for (int i = 0; i < _counts.Length; i += Stride)
            {
                total += Volatile.Read(ref _counts[i]);
            }

            return total;
        }
    }

    public int Reconnects => Volatile.Read(ref _reconnects);

    public TimeSpan Elapsed => _clock.Elapsed;

    /// <summary>
    /// Makes one call first (JIT, connection), then starts <paramref name="callers"/> callers of
    /// <paramref name="method"/> (add, list1 or list100) on <paramref name="users"/>.
    /// </summary>
    /// <param name="client">The client behind <paramref name="users"/>; watched for reconnects,
    /// and closed by <see cref="StopAsync"/> if callers still wait for a connection.</param>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired during the first call.</exception>
    public static async Task<LoadLoop> StartAsync(MuxClient client, IUserService users, string method, int callers, CancellationToken cancellationToken)
    {
        var loop = new LoadLoop(client, users, method, callers);
        await loop._call().AsTask().WaitAsync(cancellationToken);
        client.StateChanged += loop.OnStateChanged;
        loop._clock.Start();
        loop._callers = new Task[callers];
        for (int i = 0; i < callers; i++)
        {
            loop._callers[i] = loop.CallerAsync(i);
        }

        return loop;
    }

    /// <summary>Stops the callers and returns what they did. Calls in flight may finish for a
    /// short while; after that the client is closed so that calls waiting for a server that is
    /// down end now.</summary>
    public async Task<LoadResult> StopAsync()
    {
        _stop.Cancel();
        _clock.Stop();
        _client.StateChanged -= OnStateChanged;
        Task all = Task.WhenAll(_callers);
        if (await Task.WhenAny(all, Task.Delay(StopGrace)) != all)
        {
            _closedByStop = true;
            await _client.DisposeAsync();
        }

        await all;
        var merged = new LatencyHistogram();
        foreach (LatencyHistogram histogram in _histograms)
        {
            merged.Add(histogram);
        }

        return new LoadResult(Calls, Errors, _clock.Elapsed.TotalSeconds, merged.Percentile(50), merged.Percentile(99), Reconnects);
    }

    private async Task CallerAsync(int index)
    {
        var histogram = _histograms[index] = new LatencyHistogram();
        await Task.Yield();
        int failuresInARow = 0;
        while (!_stop.IsCancellationRequested)
        {
            long start = Stopwatch.GetTimestamp();
            try
            {
                await _call();
                histogram.Record((long)Stopwatch.GetElapsedTime(start).TotalMicroseconds);
                _counts[index * Stride]++;
                failuresInARow = 0;
            }
            catch (Exception ex) when (!_closedByStop)
            {
                Errors.Count(ex);
                failuresInARow++;
                await PauseAsync(failuresInARow);
            }
            catch (Exception)
            {
                // StopAsync closed the client under this call: not an error of the load.
            }
        }
    }

    private async Task PauseAsync(int failuresInARow)
    {
        TimeSpan pause = FirstPause * Math.Pow(2, Math.Min(failuresInARow - 1, 10));
        await Task.Delay(pause < MaxPause ? pause : MaxPause, _stop.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
    }

    private void OnStateChanged(object? sender, MuxClientStateChangedEventArgs e)
    {
        if (e.State == MuxClientState.Connected && e.PreviousState == MuxClientState.Reconnecting)
        {
            Interlocked.Increment(ref _reconnects);
        }
    }

    private static void CheckList(List<User> list, int expected)
    {
        if (list.Count != expected || list[0].City != "GuangZhou")
        {
            throw new InvalidOperationException($"List({expected}) returned {list.Count} users.");
        }
    }
}
