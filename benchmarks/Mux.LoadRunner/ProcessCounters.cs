using System.Diagnostics;

namespace Mux.LoadRunner;

/// <summary>The process-wide counters a window is measured with: CPU time, allocations, GCs.</summary>
internal readonly record struct ProcessCounters(TimeSpan Cpu, long AllocatedBytes, int Gen0, int Gen1, int Gen2)
{
    public static ProcessCounters Take()
    {
        using Process self = Process.GetCurrentProcess();
        return new ProcessCounters(
            self.TotalProcessorTime,
            GC.GetTotalAllocatedBytes(precise: true),
            GC.CollectionCount(0),
            GC.CollectionCount(1),
            GC.CollectionCount(2));
    }

    public static ProcessCounters operator -(ProcessCounters end, ProcessCounters start) => new(
        end.Cpu - start.Cpu,
        end.AllocatedBytes - start.AllocatedBytes,
        end.Gen0 - start.Gen0,
        end.Gen1 - start.Gen1,
        end.Gen2 - start.Gen2);
}

/// <summary>
/// The server side of the measured window: the orchestrator writes "begin" and "end" to the
/// server's stdin at the window's edges, and the server snapshots its counters at each. The
/// control request (after the window) reads the difference.
/// </summary>
internal sealed class WindowMarks(Func<(long FramesSent, long SocketSends)> transportCounters)
{
    private readonly Lock _gate = new();
    private ProcessCounters _begin;
    private ProcessCounters _end;
    private (long FramesSent, long SocketSends) _transportBegin;
    private (long FramesSent, long SocketSends) _transportEnd;
    private bool _hasBegin;
    private bool _hasEnd;
    private TaskCompletionSource _ended = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public void Begin()
    {
        ProcessCounters now = ProcessCounters.Take();
        (long, long) transport = transportCounters();
        lock (_gate)
        {
            _begin = now;
            _transportBegin = transport;
            _hasBegin = true;
            _hasEnd = false;
            if (_ended.Task.IsCompleted)
            {
                _ended = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            }
        }
    }

    public void End()
    {
        ProcessCounters now = ProcessCounters.Take();
        (long, long) transport = transportCounters();
        lock (_gate)
        {
            _end = now;
            _transportEnd = transport;
            _hasEnd = _hasBegin;
            _ended.TrySetResult();
        }
    }

    /// <summary>
    /// The window's counters. The "end" mark and the control request travel different ways (stdin
    /// and a socket), so a request that arrives first waits up to two seconds for the mark.
    /// </summary>
    public async Task<ServerStats> GetStatsAsync(Func<long> connectionsAccepted)
    {
        Task ended;
        lock (_gate)
        {
            ended = _ended.Task;
        }

        await ended.WaitAsync(TimeSpan.FromSeconds(2)).ContinueWith(static _ => { }, TaskScheduler.Default);
        return GetStats(connectionsAccepted());
    }

    private ServerStats GetStats(long connectionsAccepted)
    {
        lock (_gate)
        {
            if (!_hasEnd)
            {
                return new ServerStats(false, 0, 0, 0, 0, 0, connectionsAccepted, 0, 0);
            }

            ProcessCounters delta = _end - _begin;
            return new ServerStats(
                true,
                (long)delta.Cpu.TotalMicroseconds,
                delta.AllocatedBytes,
                delta.Gen0,
                delta.Gen1,
                delta.Gen2,
                connectionsAccepted,
                _transportEnd.FramesSent - _transportBegin.FramesSent,
                _transportEnd.SocketSends - _transportBegin.SocketSends);
        }
    }
}

/// <summary>
/// Machine-wide CPU time from the first line of /proc/stat (Linux; USER_HZ = 100), so a point can
/// say how much CPU processes other than its client and server used during its window.
/// </summary>
internal readonly record struct MachineCpu(TimeSpan Busy, TimeSpan Steal)
{
    private const double TicksPerJiffy = TimeSpan.TicksPerSecond / 100.0;

    public static MachineCpu? Take()
    {
        try
        {
            string? line = File.ReadLines("/proc/stat").FirstOrDefault();
            if (line is null || !line.StartsWith("cpu ", StringComparison.Ordinal))
            {
                return null;
            }

            // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user)
            long[] fields = [.. line.Split(' ', StringSplitOptions.RemoveEmptyEntries).Skip(1).Select(long.Parse)];
            if (fields.Length < 8)
            {
                return null;
            }

            long busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6];
            return new MachineCpu(Jiffies(busy), Jiffies(fields[7]));
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or FormatException)
        {
            return null;
        }
    }

    private static TimeSpan Jiffies(long jiffies) => TimeSpan.FromTicks((long)(jiffies * TicksPerJiffy));
}
