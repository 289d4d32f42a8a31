using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;

namespace Mux.LoadRunner;

/// <summary>How a soak call ended.</summary>
internal enum SoakOutcome
{
    /// <summary>It returned the right answer (or a cancellation aimed at it came after it had).</summary>
    Ok,

    /// <summary><see cref="MuxConnectionException"/>: its connection was lost, as at a server kill.</summary>
    ConnectionLost,

    /// <summary>A call made to outlive its deadline failed with <see cref="TimeoutException"/>.</summary>
    ExpectedTimeout,

    /// <summary>A call its caller cancelled failed with <see cref="OperationCanceledException"/>.</summary>
    ExpectedCancel,

    /// <summary>Anything else: a wrong answer, a timeout or cancellation nobody asked for, another exception.</summary>
    Other,
}

/// <summary>The ledger's counters at one moment; differences of two give an interval's.</summary>
internal readonly record struct SoakCounts(
    long Started,
    long Completed,
    long Ok,
    long ConnectionLost,
    long ExpectedTimeout,
    long ExpectedCancel,
    long Other,
    long ConnectionLostOutside,
    long OtherOutside,
    long Stuck)
{
    public long InFlight => Started - Completed;

    /// <summary>Errors no fault window explains: the run fails if there is one.</summary>
    public long ErrorsOutside => ConnectionLostOutside + OtherOutside;

    public static SoakCounts operator -(SoakCounts end, SoakCounts start) => new(
        end.Started - start.Started,
        end.Completed - start.Completed,
        end.Ok - start.Ok,
        end.ConnectionLost - start.ConnectionLost,
        end.ExpectedTimeout - start.ExpectedTimeout,
        end.ExpectedCancel - start.ExpectedCancel,
        end.Other - start.Other,
        end.ConnectionLostOutside - start.ConnectionLostOutside,
        end.OtherOutside - start.OtherOutside,
        end.Stuck - start.Stuck);
}

/// <summary>
/// Every call of a soak from the moment it is made to the moment it ends in any way: counts of calls
/// made and ended (their difference at the end is the calls lost), each ending by kind, and the calls
/// still outstanding past their own deadline plus <see cref="StuckMargin"/> (stuck). An error is
/// "outside" when no fault window (<see cref="FaultWindows"/>) holds the moment it surfaced.
/// </summary>
internal sealed class SoakLedger(FaultWindows windows)
{
    /// <summary>How long past its deadline a call may still be outstanding before it counts as stuck:
    /// a deadline's timer and a loaded machine's scheduling get that much slack.</summary>
    public static readonly TimeSpan StuckMargin = TimeSpan.FromSeconds(10);

    // The summary describes a few errors inside fault windows (they are alike: the killed server's
    // calls) and more of those outside, which fail the run.
    private const int MaxInsideMessages = 3;
    private const int MaxOutsideMessages = 20;

    // The calls made and not yet ended, by id; added by the caller's task, removed by the same task
    // when the call ends, read by the watchdog (StuckScan).
    private readonly ConcurrentDictionary<long, SoakCall> _inFlight = new();

    // The first errors inside and outside fault windows, with their time, for the summary; guarded by _messages.
    private readonly List<string> _messages = [];
    private int _insideMessages;
    private int _outsideMessages;

    // The errors outside fault windows not yet printed (at most MaxOutsideMessages in all); drained by the soak's loop.
    private readonly ConcurrentQueue<string> _unprinted = new();

    // Counters incremented with Interlocked by the callers (and the watchdog for _stuck).
    private long _nextId;
    private long _started;
    private long _completed;
    private long _ok;
    private long _connectionLost;
    private long _expectedTimeout;
    private long _expectedCancel;
    private long _other;
    private long _connectionLostOutside;
    private long _otherOutside;
    private long _stuck;

    public FaultWindows Windows => windows;

    /// <summary>The Stopwatch timestamp the load started at: the 0 s of every time the soak prints.</summary>
    public long Origin { get; private set; } = Stopwatch.GetTimestamp();

    public void MarkOrigin() => Origin = Stopwatch.GetTimestamp();

    public SoakCall Begin(string kind, TimeSpan deadline)
    {
        var call = new SoakCall(Interlocked.Increment(ref _nextId), kind, Stopwatch.GetTimestamp(), deadline);
        _inFlight[call.Id] = call;
        Interlocked.Increment(ref _started);
        return call;
    }

    public void End(SoakCall call, SoakOutcome outcome, string? error = null)
    {
        long now = Stopwatch.GetTimestamp();
        switch (outcome)
        {
            case SoakOutcome.Ok:
                Interlocked.Increment(ref _ok);
                break;
            case SoakOutcome.ExpectedTimeout:
                Interlocked.Increment(ref _expectedTimeout);
                break;
            case SoakOutcome.ExpectedCancel:
                Interlocked.Increment(ref _expectedCancel);
                break;
            default:
                bool inside = windows.Contains(now);
                if (outcome == SoakOutcome.ConnectionLost)
                {
                    Interlocked.Increment(ref _connectionLost);
                    if (!inside)
                    {
                        Interlocked.Increment(ref _connectionLostOutside);
                    }
                }
                else
                {
                    Interlocked.Increment(ref _other);
                    if (!inside)
                    {
                        Interlocked.Increment(ref _otherOutside);
                    }
                }

                Note(now, call, outcome, inside, error);
                break;
        }

        _inFlight.TryRemove(call.Id, out _);
        Interlocked.Increment(ref _completed);
    }

    public SoakCounts Counts
    {
        get
        {
            // Ended is read before made: a call made and ended between the two reads counts as
            // made only, so in flight (made minus ended) never reads below zero.
            long completed = Interlocked.Read(ref _completed);
            return new(
                Interlocked.Read(ref _started),
                completed,
                Interlocked.Read(ref _ok),
                Interlocked.Read(ref _connectionLost),
                Interlocked.Read(ref _expectedTimeout),
                Interlocked.Read(ref _expectedCancel),
                Interlocked.Read(ref _other),
                Interlocked.Read(ref _connectionLostOutside),
                Interlocked.Read(ref _otherOutside),
                Interlocked.Read(ref _stuck));
        }
    }

    /// <summary>Marks the calls outstanding past their deadline plus <see cref="StuckMargin"/> as
    /// stuck (each once) and describes the newly stuck ones.</summary>
    public List<string> StuckScan()
    {
        long now = Stopwatch.GetTimestamp();
        var found = new List<string>();
        foreach (SoakCall call in _inFlight.Values)
        {
            TimeSpan age = Stopwatch.GetElapsedTime(call.Started, now);
            if (age > call.Deadline + StuckMargin && !call.Stuck)
            {
                call.Stuck = true;
                Interlocked.Increment(ref _stuck);
                found.Add(string.Create(CultureInfo.InvariantCulture, $"{call.Kind} made at {Seconds(call.Started):0.0} s, outstanding {age.TotalSeconds:0.0} s (deadline {call.Deadline.TotalSeconds:0.###} s)"));
            }
        }

        return found;
    }

    /// <summary>The calls still outstanding, described (for the calls lost at the end).</summary>
    public List<string> DescribeInFlight(int max)
    {
        long now = Stopwatch.GetTimestamp();
        return [.. _inFlight.Values.OrderBy(c => c.Started).Take(max).Select(c => string.Create(CultureInfo.InvariantCulture, $"{c.Kind} made at {Seconds(c.Started):0.0} s, outstanding {Stopwatch.GetElapsedTime(c.Started, now).TotalSeconds:0.0} s"))];
    }

    public IReadOnlyList<string> Messages
    {
        get
        {
            lock (_messages)
            {
                return [.. _messages];
            }
        }
    }

    /// <summary>The errors outside fault windows since the last call (the first few of the run only).</summary>
    public List<string> TakeUnprinted()
    {
        var taken = new List<string>();
        while (_unprinted.TryDequeue(out string? message))
        {
            taken.Add(message);
        }

        return taken;
    }

    private void Note(long now, SoakCall call, SoakOutcome outcome, bool inside, string? error)
    {
        lock (_messages)
        {
            ref int noted = ref inside ? ref _insideMessages : ref _outsideMessages;
            if (noted < (inside ? MaxInsideMessages : MaxOutsideMessages))
            {
                noted++;
                string message = string.Create(CultureInfo.InvariantCulture, $"{Seconds(now):0.0} s, {(inside ? "in a fault window" : "OUTSIDE every fault window")}: {call.Kind}, {outcome}: {error}");
                _messages.Add(message);
                if (!inside)
                {
                    _unprinted.Enqueue(message);
                }
            }
        }
    }

    private double Seconds(long timestamp) => Stopwatch.GetElapsedTime(Origin, timestamp).TotalSeconds;
}

/// <summary>One call the soak made: what it is, when it was made and the deadline it was given.</summary>
internal sealed class SoakCall(long id, string kind, long started, TimeSpan deadline)
{
    public long Id { get; } = id;

    public string Kind { get; } = kind;

    public long Started { get; } = started;

    public TimeSpan Deadline { get; } = deadline;

    // Set once by the watchdog, so that a stuck call is counted once.
    public bool Stuck { get; set; }
}

/// <summary>
/// The periods around injected faults (a server kill up to a few seconds after the client has
/// reconnected to its replacement) in which errors are expected. Opened and closed by the restart
/// loop, read by every caller whose call failed.
/// </summary>
internal sealed class FaultWindows
{
    private readonly Lock _gate = new();

    // Each window's Stopwatch start and end; the end is long.MaxValue while the window is open.
    private readonly List<(long Start, long End)> _windows = [];

    /// <summary>Opens a window at <paramref name="start"/> and returns its index for <see cref="Close"/>.</summary>
    public int Open(long start)
    {
        lock (_gate)
        {
            _windows.Add((start, long.MaxValue));
            return _windows.Count - 1;
        }
    }

    public void Close(int index, long end)
    {
        lock (_gate)
        {
            _windows[index] = (_windows[index].Start, end);
        }
    }

    public int Count
    {
        get
        {
            lock (_gate)
            {
                return _windows.Count;
            }
        }
    }

    public bool Contains(long timestamp)
    {
        lock (_gate)
        {
            foreach ((long start, long end) in _windows)
            {
                if (timestamp >= start && timestamp <= end)
                {
                    return true;
                }
            }

            return false;
        }
    }
}
