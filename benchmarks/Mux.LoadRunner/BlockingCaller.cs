using System.Diagnostics;

namespace Mux.LoadRunner;

/// <summary>What the blocking caller did in one point's window.</summary>
/// <param name="Calls">Blocking calls that completed.</param>
/// <param name="MinMilliseconds">The shortest of them, as the client saw it.</param>
/// <param name="MaxMilliseconds">The longest of them, as the client saw it.</param>
/// <param name="Failure">The first failure, if one failed (the loop stops there).</param>
internal sealed record BlockingSummary(int Calls, double MinMilliseconds, double MaxMilliseconds, string? Failure);

/// <summary>
/// --blocking-handler: one more caller on the measured connection that calls the bench service's
/// Block handler, which holds its server thread for <see cref="BlockFor"/>, then waits
/// <see cref="PauseFor"/> and calls it again, until stopped. The pause leaves the window with
/// stretches in which no blocking call is in flight, so that the closed-loop callers' latency with
/// one and without one come from the same connection, server and minute.
/// </summary>
internal sealed class BlockingCaller
{
    public static readonly TimeSpan BlockFor = TimeSpan.FromSeconds(1);
    public static readonly TimeSpan PauseFor = TimeSpan.FromSeconds(1);

    private readonly MuxBenchClient _client;
    private readonly BlockWindows _windows;
    private readonly CancellationTokenSource _stop = new();
    private readonly List<double> _milliseconds = [];
    private string? _failure;
    private Task? _loop;

    public BlockingCaller(MuxBenchClient client, BlockWindows windows)
    {
        _client = client;
        _windows = windows;
    }

    public void Start() => _loop = Task.Run(LoopAsync);

    /// <summary>Stops after the blocking call in flight, if any, returns (it is not cancelled: the
    /// server would go on blocking anyway).</summary>
    public async Task<BlockingSummary> StopAsync(TimeSpan timeout)
    {
        await _stop.CancelAsync();
        if (_loop is not null)
        {
            try
            {
                await _loop.WaitAsync(timeout);
            }
            catch (TimeoutException)
            {
                _failure ??= $"a blocking call still in flight {timeout.TotalSeconds:0} s after the window closed";
            }
        }

        lock (_milliseconds)
        {
            return _milliseconds.Count == 0
                ? new BlockingSummary(0, 0, 0, _failure ?? "no blocking call completed")
                : new BlockingSummary(_milliseconds.Count, _milliseconds.Min(), _milliseconds.Max(), _failure);
        }
    }

    private async Task LoopAsync()
    {
        int milliseconds = (int)BlockFor.TotalMilliseconds;
        while (!_stop.IsCancellationRequested)
        {
            long start = Stopwatch.GetTimestamp();
            _windows.Enter();
            try
            {
                await _client.BlockAsync(milliseconds);
            }
            catch (Exception ex)
            {
                _failure = $"blocking call: {ex.GetType().Name}: {ex.Message}";
                return;
            }
            finally
            {
                _windows.Exit();
            }

            lock (_milliseconds)
            {
                _milliseconds.Add(Stopwatch.GetElapsedTime(start).TotalMilliseconds);
            }

            try
            {
                await Task.Delay(PauseFor, _stop.Token);
            }
            catch (OperationCanceledException)
            {
                return;
            }
        }
    }
}
