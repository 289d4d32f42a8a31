using System.Globalization;
using System.Runtime.CompilerServices;
using Mux.Samples.Contracts;

namespace Mux.LoadRunner;

/// <summary>
/// The soak's callers, all on one client: unary calls (add and list1, alternating, each caller
/// pausing after every call), a server stream and a client stream back to back, a 16 MiB message
/// every few seconds (upload and download alternating), calls cancelled by their caller at random
/// points (a slow handler, a long server stream, an endless client stream), and calls whose short
/// deadline passes while their handler still sleeps. Every call goes through the
/// <see cref="SoakLedger"/>, with the deadline it was given. Stopping ends each caller after its
/// current call: a call is never abandoned, so that one that does not end shows as lost.
/// </summary>
internal sealed class SoakLoad
{
    public const int BigMessageBytes = 16 * 1024 * 1024;

    public static readonly TimeSpan BigMessageEvery = TimeSpan.FromSeconds(3);

    // A stream's call timeout bounds only its wait for a connection: the soak gives each stream a
    // deadline of its own through its token, long enough for a loaded machine.
    private static readonly TimeSpan s_streamDeadline = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_bigDeadline = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan s_streamPause = TimeSpan.FromMilliseconds(20);
    private static readonly TimeSpan s_faultPause = TimeSpan.FromMilliseconds(10);
    private static readonly int[] s_shortDeadlinesMs = [10, 50, 100, 200, 300];

    private const int CancellingCallers = 2;
    private const int DeadlineCallers = 2;
    private const int MaxStreamItems = 5000;

    // The handler sleeps this long under a deadline of at most 300 ms, and under a cancellation
    // that comes within 200 ms: neither call may end with an answer.
    private const int SleepPastDeadlineMs = 1000;
    private const int SleepCancelledMs = 2000;

    private readonly SoakLedger _ledger;
    private readonly TimeSpan _callTimeout;
    private readonly TimeSpan _pause;
    private readonly IBenchService _bench;
    private readonly IBenchStreams _streams;
    private readonly ISoakService _soak;
    private readonly IBenchService _bigBench;
    private readonly ISoakService _bigSoak;
    private readonly ISoakService[] _shortDeadlines;
    private readonly byte[] _upload = new byte[BigMessageBytes];
    private readonly CancellationTokenSource _stop = new();
    private readonly List<Task> _callers = [];

    // Held by the 16 MiB caller for each transfer and by a memory sample, so that a sample never
    // counts a message half sent or half received (up to 16 MiB of live buffers) as held memory.
    private readonly SemaphoreSlim _bigMessage = new(1, 1);

    private enum Expected
    {
        Answer,
        Timeout,
        Cancellation,
    }

    public SoakLoad(MuxClient client, SoakLedger ledger, TimeSpan callTimeout, TimeSpan pause)
    {
        _ledger = ledger;
        _callTimeout = callTimeout;
        _pause = pause;
        _bench = client.CreateProxy<IBenchService>();
        _streams = client.CreateProxy<IBenchStreams>();
        _soak = client.CreateProxy<ISoakService>();
        _bigBench = client.CreateProxy<IBenchService>(new MuxCallOptions { Timeout = s_bigDeadline });
        _bigSoak = client.CreateProxy<ISoakService>(new MuxCallOptions { Timeout = s_bigDeadline });
        _shortDeadlines = [.. s_shortDeadlinesMs.Select(ms => client.CreateProxy<ISoakService>(new MuxCallOptions { Timeout = TimeSpan.FromMilliseconds(ms) }))];
        Random.Shared.NextBytes(_upload);
    }

    /// <summary>What runs besides the unary callers, for the header line.</summary>
    public static string Describe(int unaryCallers, TimeSpan pause) => string.Create(
        CultureInfo.InvariantCulture,
        $"{unaryCallers} callers of add/list1 (pausing {pause.TotalMilliseconds:0} ms after each call), one server stream and one client stream caller (up to {MaxStreamItems} ints each), a {BigMessageBytes / (1024 * 1024)} MiB upload or download every {BigMessageEvery.TotalSeconds:0} s, {CancellingCallers} callers whose calls are cancelled at random points, {DeadlineCallers} callers whose deadline ({string.Join("/", s_shortDeadlinesMs)} ms) passes in a {SleepPastDeadlineMs} ms handler");

    public void Start(int unaryCallers)
    {
        for (int i = 0; i < unaryCallers; i++)
        {
            int caller = i;
            _callers.Add(Task.Run(() => UnaryCallerAsync(caller)));
        }

        _callers.Add(Task.Run(ServerStreamsAsync));
        _callers.Add(Task.Run(ClientStreamsAsync));
        _callers.Add(Task.Run(BigMessagesAsync));
        for (int i = 0; i < CancellingCallers; i++)
        {
            _callers.Add(Task.Run(CancellingCallerAsync));
        }

        for (int i = 0; i < DeadlineCallers; i++)
        {
            _callers.Add(Task.Run(DeadlineCallerAsync));
        }
    }

    /// <summary>Runs <paramref name="take"/> between two 16 MiB transfers (waiting for the one under
    /// way, unless it outlives its deadline: then it is stuck, and the sample is taken anyway).</summary>
    public async Task<T> BetweenBigMessagesAsync<T>(Func<T> take)
    {
        bool held = await _bigMessage.WaitAsync(s_bigDeadline + SoakLedger.StuckMargin);
        try
        {
            return take();
        }
        finally
        {
            if (held)
            {
                _bigMessage.Release();
            }
        }
    }

    /// <summary>Lets every caller finish its current call; false if some had not within <paramref name="timeout"/>.</summary>
    public async Task<bool> StopAsync(TimeSpan timeout)
    {
        _stop.Cancel();
        try
        {
            await Task.WhenAll(_callers).WaitAsync(timeout);
            return true;
        }
        catch (TimeoutException)
        {
            return false;
        }
    }

    private async Task UnaryCallerAsync(int caller)
    {
        for (int n = 0; !_stop.IsCancellationRequested; n++)
        {
            bool add = (n & 1) == 0;
            SoakCall call = _ledger.Begin(add ? "add" : "list1", _callTimeout);
            try
            {
                string? wrong;
                if (add)
                {
                    int sum = await _bench.Add(caller, n);
                    wrong = sum == caller + n ? null : $"Add({caller}, {n}) returned {sum}";
                }
                else
                {
                    List<User> users = await _bench.List(1);
                    wrong = users.Count == 1 && users[0].City == BenchChecks.City ? null : $"List(1) returned {users.Count} users";
                }

                _ledger.End(call, wrong is null ? SoakOutcome.Ok : SoakOutcome.Other, wrong);
            }
            catch (Exception ex)
            {
                _ledger.End(call, Classify(ex, Expected.Answer, null), Describe(ex));
            }

            await PauseAsync(_pause);
        }
    }

    private async Task ServerStreamsAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            int count = Random.Shared.Next(1, MaxStreamItems + 1);
            await CallAsync("server stream", s_streamDeadline, Expected.Answer, s_streamDeadline, token => ReadIntsAsync(count, token));
            await PauseAsync(s_streamPause);
        }
    }

    private async Task ClientStreamsAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            int count = Random.Shared.Next(1, MaxStreamItems + 1);
            await CallAsync("client stream", s_streamDeadline, Expected.Answer, s_streamDeadline, token => SumAsync(count, token));
            await PauseAsync(s_streamPause);
        }
    }

    private async Task BigMessagesAsync()
    {
        for (int n = 0; !_stop.IsCancellationRequested; n++)
        {
            await PauseAsync(BigMessageEvery);
            if (_stop.IsCancellationRequested)
            {
                break;
            }

            await _bigMessage.WaitAsync();
            try
            {
                await TransferAsync(upload: (n & 1) == 0);
            }
            finally
            {
                _bigMessage.Release();
            }
        }
    }

    private Task TransferAsync(bool upload) => upload
        ? CallAsync("16 MiB upload", s_bigDeadline, Expected.Answer, null, async _ =>
        {
            int length = await _bigSoak.Upload(_upload);
            return length == BigMessageBytes ? null : $"the server received {length} bytes of {BigMessageBytes}";
        })
        : CallAsync("16 MiB download", s_bigDeadline, Expected.Answer, null, async _ =>
        {
            byte[] data = await _bigBench.Bytes(BigMessageBytes);
            // BenchData.Bytes: byte i is (byte)i; a few places stand for the whole.
            return data.Length == BigMessageBytes && data[0] == 0 && data[12_345] == unchecked((byte)12_345) && data[^1] == unchecked((byte)(BigMessageBytes - 1))
                ? null
                : $"a download of {data.Length} bytes, not the {BigMessageBytes} sent";
        });

    private async Task CancellingCallerAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            // From before the call is sent (0) to well into it.
            TimeSpan after = TimeSpan.FromMilliseconds(Random.Shared.Next(0, 200));
            switch (Random.Shared.Next(3))
            {
                case 0:
                    await CallAsync("cancelled Sleep", _callTimeout, Expected.Cancellation, after, async token =>
                    {
                        int slept = await _soak.Sleep(SleepCancelledMs, token);
                        return slept == SleepCancelledMs ? null : $"Sleep({SleepCancelledMs}) returned {slept}";
                    });
                    break;
                case 1:
                    await CallAsync("cancelled server stream", _callTimeout, Expected.Cancellation, after, async token =>
                    {
                        await foreach (int _ in _streams.Ints(int.MaxValue, token))
                        {
                        }

                        return null;
                    });
                    break;
                default:
                    await CallAsync("cancelled client stream", _callTimeout, Expected.Cancellation, after, async token =>
                    {
                        await _soak.Sum(Values(int.MaxValue), token);
                        return null;
                    });
                    break;
            }

            await PauseAsync(s_faultPause);
        }
    }

    private async Task DeadlineCallerAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            int index = Random.Shared.Next(_shortDeadlines.Length);
            await CallAsync("Sleep past its deadline", TimeSpan.FromMilliseconds(s_shortDeadlinesMs[index]), Expected.Timeout, null, async _ =>
            {
                int slept = await _shortDeadlines[index].Sleep(SleepPastDeadlineMs);
                return $"Sleep({SleepPastDeadlineMs}) returned {slept} under a {s_shortDeadlinesMs[index]} ms deadline";
            });
            await PauseAsync(s_faultPause);
        }
    }

    /// <summary>One call through the ledger. <paramref name="call"/> returns null for a right answer,
    /// else what was wrong; <paramref name="cancelAfter"/> cancels its token then (before the call
    /// for 0), as the caller's cancellation or, with <see cref="Expected.Answer"/>, as the deadline
    /// of a stream.</summary>
    private async Task CallAsync(string kind, TimeSpan deadline, Expected expected, TimeSpan? cancelAfter, Func<CancellationToken, Task<string?>> call)
    {
        using var cancel = new CancellationTokenSource();
        SoakCall record = _ledger.Begin(kind, deadline);
        try
        {
            if (cancelAfter == TimeSpan.Zero)
            {
                cancel.Cancel();
            }
            else if (cancelAfter is { } delay)
            {
                cancel.CancelAfter(delay);
            }

            // A cancellation that comes after the answer is no error (the call returns null then);
            // an answer to a call whose deadline is shorter than its handler is one.
            string? wrong = await call(cancel.Token);
            _ledger.End(record, wrong is null ? SoakOutcome.Ok : SoakOutcome.Other, wrong);
        }
        catch (Exception ex)
        {
            SoakOutcome outcome = Classify(ex, expected, cancel);
            _ledger.End(record, outcome, outcome == SoakOutcome.Other && ex is OperationCanceledException && cancel.IsCancellationRequested
                ? $"did not end within its {deadline.TotalSeconds:0} s deadline ({Describe(ex)})"
                : Describe(ex));
        }
    }

    private static SoakOutcome Classify(Exception ex, Expected expected, CancellationTokenSource? cancel) => ex switch
    {
        MuxConnectionException => SoakOutcome.ConnectionLost,
        TimeoutException when expected == Expected.Timeout => SoakOutcome.ExpectedTimeout,
        OperationCanceledException when expected == Expected.Cancellation && cancel is { IsCancellationRequested: true } => SoakOutcome.ExpectedCancel,
        _ => SoakOutcome.Other,
    };

    private static string Describe(Exception ex) => $"{ex.GetType().Name}: {ex.Message}";

    private async Task<string?> ReadIntsAsync(int count, CancellationToken cancellationToken)
    {
        int received = 0;
        await foreach (int value in _streams.Ints(count, cancellationToken))
        {
            if (value != received)
            {
                return $"item {received} of a server stream arrived as {value}";
            }

            received++;
        }

        return received == count ? null : $"a server stream of {count} ints ended after {received}";
    }

    private async Task<string?> SumAsync(int count, CancellationToken cancellationToken)
    {
        long sum = await _soak.Sum(Values(count), cancellationToken);
        long expected = (long)count * (count - 1) / 2;
        return sum == expected ? null : $"a client stream of {count} ints summed to {sum}, not {expected}";
    }

    private static async IAsyncEnumerable<int> Values(int count, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 0; i < count && !cancellationToken.IsCancellationRequested; i++)
        {
            if ((i & 1023) == 1023)
            {
                await Task.Yield(); // an endless stream must not hold its thread
            }

            yield return i;
        }
    }

    private async Task PauseAsync(TimeSpan pause)
    {
        if (pause > TimeSpan.Zero)
        {
            await Task.Delay(pause, _stop.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }
    }
}
