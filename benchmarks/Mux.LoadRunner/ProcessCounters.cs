using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Mux.LoadRunner;

/// <summary>
/// The process-wide counters a window is measured with: CPU time, allocations, GCs, and what
/// predicts how a process scales with cores: thread-pool work items completed, lock contentions
/// (Monitor.LockContentionCount, which counts System.Threading.Lock's too), and context switches;
/// with --metrics, the "Mux" meter's measurements the process's listener took.
/// </summary>
internal readonly record struct ProcessCounters(
    TimeSpan Cpu,
    long AllocatedBytes,
    int Gen0,
    int Gen1,
    int Gen2,
    long WorkItems,
    long LockContentions,
    long VoluntaryContextSwitches,
    long InvoluntaryContextSwitches,
    long MetricMeasurements,
    long JitMethods)
{
    public static ProcessCounters Take()
    {
        using Process self = Process.GetCurrentProcess();
        ContextSwitches.Take(out long voluntary, out long involuntary);
        return new ProcessCounters(
            self.TotalProcessorTime,
            GC.GetTotalAllocatedBytes(precise: true),
            GC.CollectionCount(0),
            GC.CollectionCount(1),
            GC.CollectionCount(2),
            ThreadPool.CompletedWorkItemCount,
            Monitor.LockContentionCount,
            voluntary,
            involuntary,
            MetricsTally.TotalMeasurements(),
            System.Runtime.JitInfo.GetCompiledMethodCount());
    }

    public static ProcessCounters operator -(ProcessCounters end, ProcessCounters start) => new(
        end.Cpu - start.Cpu,
        end.AllocatedBytes - start.AllocatedBytes,
        end.Gen0 - start.Gen0,
        end.Gen1 - start.Gen1,
        end.Gen2 - start.Gen2,
        end.WorkItems - start.WorkItems,
        end.LockContentions - start.LockContentions,
        end.VoluntaryContextSwitches - start.VoluntaryContextSwitches,
        end.InvoluntaryContextSwitches - start.InvoluntaryContextSwitches,
        end.MetricMeasurements - start.MetricMeasurements,
        end.JitMethods - start.JitMethods);
}

/// <summary>
/// The process's context switches, every thread's, from getrusage(RUSAGE_SELF). Not from
/// /proc/self/status: on Linux its voluntary_ctxt_switches and nonvoluntary_ctxt_switches are the
/// main thread's alone (they stay put while other threads switch thousands of times). Summing
/// /proc/self/task/*/status covers the live threads but drops a thread's switches when it exits,
/// and thread-pool threads come and go; getrusage keeps the counts of exited threads too.
/// </summary>
internal static class ContextSwitches
{
    private const int RusageSelf = 0;

    /// <summary>Whether the counts are real: getrusage is there (Linux, macOS). Elsewhere both are 0.</summary>
    public static bool Available { get; } = OperatingSystem.IsLinux() || OperatingSystem.IsMacOS();

    public static void Take(out long voluntary, out long involuntary)
    {
        voluntary = 0;
        involuntary = 0;
        if (Available && GetRUsage(RusageSelf, out RUsage usage) == 0)
        {
            voluntary = usage.VoluntaryContextSwitches;
            involuntary = usage.InvoluntaryContextSwitches;
        }
    }

    [DllImport("libc", EntryPoint = "getrusage")]
    private static extern int GetRUsage(int who, out RUsage usage);

    /// <summary>struct rusage on 64-bit Linux and macOS: two struct timevals, then fourteen longs,
    /// of which ru_nvcsw and ru_nivcsw are the last two.</summary>
    [StructLayout(LayoutKind.Sequential)]
    private struct RUsage
    {
        public long UserSeconds;
        public long UserMicroseconds;
        public long SystemSeconds;
        public long SystemMicroseconds;
        public long MaxResidentSet;
        public long SharedMemory;
        public long UnsharedData;
        public long UnsharedStack;
        public long MinorFaults;
        public long MajorFaults;
        public long Swaps;
        public long BlockInputs;
        public long BlockOutputs;
        public long MessagesSent;
        public long MessagesReceived;
        public long Signals;
        public long VoluntaryContextSwitches;
        public long InvoluntaryContextSwitches;
    }
}

/// <summary>
/// The server side of the measured window: the orchestrator writes "begin" and "end" to the
/// server's stdin at the window's edges, and the server snapshots its counters at each. The
/// control request (after the window) reads the difference.
/// The transport counters are the server's frame and socket counts (raw echo: frames and sends;
/// Mux: every counter of its open connections, stage clocks included; the peers: none).
/// </summary>
internal sealed class WindowMarks(Func<TransportCounters> transportCounters)
{
    private readonly Lock _gate = new();
    private ProcessCounters _begin;
    private ProcessCounters _end;
    private TransportCounters _transportBegin;
    private TransportCounters _transportEnd;
    private bool _hasBegin;
    private bool _hasEnd;
    private TaskCompletionSource _ended = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public void Begin()
    {
        ProcessCounters now = ProcessCounters.Take();
        TransportCounters transport = transportCounters();
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
        TransportCounters transport = transportCounters();
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
            TransportCounters transport = _transportEnd - _transportBegin;
            return new ServerStats(
                true,
                (long)delta.Cpu.TotalMicroseconds,
                delta.AllocatedBytes,
                delta.Gen0,
                delta.Gen1,
                delta.Gen2,
                connectionsAccepted,
                transport.FramesSent,
                transport.SocketSends,
                delta.WorkItems,
                delta.LockContentions,
                delta.VoluntaryContextSwitches,
                delta.InvoluntaryContextSwitches,
                transport.FramesReceived,
                transport.SocketReceives,
                transport.Stages.ReaderMicroseconds,
                transport.Stages.WriterMicroseconds,
                delta.MetricMeasurements,
                delta.JitMethods);
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
