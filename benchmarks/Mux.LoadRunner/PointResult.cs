namespace Mux.LoadRunner;

/// <summary>One (system, method, callers) point of the sweep, as the table, JSON and CSV show it.</summary>
internal sealed class PointResult
{
    public required string System { get; init; }

    public required string Method { get; init; }

    public required int Callers { get; init; }

    /// <summary>ok, error, or unavailable.</summary>
    public string Status { get; set; } = "ok";

    public int RequestFrameBytes { get; set; }

    public int ResponseFrameBytes { get; set; }

    public long Calls { get; set; }

    public double WindowSeconds { get; set; }

    public double CallsPerSecond { get; set; }

    public double P50Us { get; set; }

    public double P99Us { get; set; }

    public double P999Us { get; set; }

    public double MaxUs { get; set; }

    public double ClientCpuUsPerCall { get; set; }

    public double? ServerCpuUsPerCall { get; set; }

    public double ClientBytesPerCall { get; set; }

    public double? ServerBytesPerCall { get; set; }

    public int ClientGen0 { get; set; }

    public int ClientGen1 { get; set; }

    public int ClientGen2 { get; set; }

    public long? ServerGen0 { get; set; }

    public long? ServerGen1 { get; set; }

    public long? ServerGen2 { get; set; }

    /// <summary>Connections the server accepted for the load (its count minus the control connection).</summary>
    public long? Connections { get; set; }

    /// <summary>Client: frames sent per socket send in the window (null for the peers, which do not expose it).</summary>
    public double? ClientFramesPerSend { get; set; }

    /// <summary>Client: frames received per socket receive in the window (null for the peers).</summary>
    public double? ClientFramesPerReceive { get; set; }

    /// <summary>Raw and Mux servers: frames sent per socket send in the window (the peers do not expose it).</summary>
    public double? ServerFramesPerSend { get; set; }

    /// <summary>CPU cores that processes other than this point's client and server kept busy
    /// during the window (from /proc/stat): above about 0.1 the point shared the machine.</summary>
    public double? OtherCpuCores { get; set; }

    /// <summary>CPU cores' worth of time the hypervisor gave to other guests during the window.</summary>
    public double? StealCpuCores { get; set; }

    // What predicts how one connection scales with cores (Mux points only; null elsewhere), each
    // per call over the window, per process: the client is the runner's process, the server the
    // child. docs/benchmarks.md, "Counters that predict scaling", says what each counts.

    /// <summary>Thread-pool work items completed per call (ThreadPool.CompletedWorkItemCount).</summary>
    public double? ClientWorkItemsPerCall { get; set; }

    public double? ServerWorkItemsPerCall { get; set; }

    /// <summary>Lock contentions per call (Monitor.LockContentionCount, System.Threading.Lock's included).</summary>
    public double? ClientLockContentionsPerCall { get; set; }

    public double? ServerLockContentionsPerCall { get; set; }

    /// <summary>Nanoseconds for one cache line to go from core 0 to core 1 and back, measured just before the window
    /// (<see cref="CoreToCore"/>): several times its usual value, the machine's cores sit far apart and every per-call
    /// figure of Mux rises with it.</summary>
    public double? CoreToCoreNs { get; set; }

    /// <summary>Methods the JIT compiled during the window (tier-up included), in each process.</summary>
    public long? ClientJitMethods { get; set; }

    public long? ServerJitMethods { get; set; }

    /// <summary>Voluntary context switches per call (a thread blocked or waited), every thread of the process (getrusage).</summary>
    public double? ClientVoluntaryContextSwitchesPerCall { get; set; }

    public double? ServerVoluntaryContextSwitchesPerCall { get; set; }

    /// <summary>Involuntary context switches per call (a thread was preempted), every thread of the process (getrusage).</summary>
    public double? ClientInvoluntaryContextSwitchesPerCall { get; set; }

    public double? ServerInvoluntaryContextSwitchesPerCall { get; set; }

    /// <summary>Socket send operations per call, from Mux's connection statistics.</summary>
    public double? ClientSocketSendsPerCall { get; set; }

    public double? ServerSocketSendsPerCall { get; set; }

    /// <summary>Socket receive operations per call, from Mux's connection statistics.</summary>
    public double? ClientSocketReceivesPerCall { get; set; }

    public double? ServerSocketReceivesPerCall { get; set; }

    /// <summary>Microseconds per call the connection's reader loop spent, by its own stage clock:
    /// from each read's buffer in hand to its AdvanceTo, less backpressure waits.</summary>
    public double? ClientReaderUsPerCall { get; set; }

    public double? ServerReaderUsPerCall { get; set; }

    /// <summary>Microseconds per call the connection's writer role spent, by its own stage clock:
    /// from the start of each turn's gathering to the return of its flush call.</summary>
    public double? ClientWriterUsPerCall { get; set; }

    public double? ServerWriterUsPerCall { get; set; }

    /// <summary>1e6 / the largest of the four stage figures: the calls/s at which the busiest serial
    /// stage would be busy all the time, whatever the cores.</summary>
    public double? SerialCeilingCallsPerSecond { get; set; }

    /// <summary>--metrics (Mux points): the "Mux" meter's measurements per call that the client's
    /// listener took in the window (call durations, and the transport's per-flush and per-read ones).</summary>
    public double? ClientMetricMeasurementsPerCall { get; set; }

    /// <summary>--metrics (Mux points): the same, the server's listener.</summary>
    public double? ServerMetricMeasurementsPerCall { get; set; }

    // --blocking-handler: the window's closed-loop calls sorted by whether they overlapped one of
    // the blocking calls (BlockWindows), and the blocking calls themselves as the client timed them.

    public int? BlockingCalls { get; set; }

    public double? BlockingCallMinMs { get; set; }

    public double? BlockingCallMaxMs { get; set; }

    public long? CallsDuringBlocks { get; set; }

    public double? DuringBlocksP50Us { get; set; }

    public double? DuringBlocksP99Us { get; set; }

    public double? DuringBlocksP999Us { get; set; }

    public double? DuringBlocksMaxUs { get; set; }

    public long? QuietCalls { get; set; }

    public double? QuietP50Us { get; set; }

    public double? QuietP99Us { get; set; }

    public double? QuietP999Us { get; set; }

    public double? QuietMaxUs { get; set; }

    public long Errors { get; set; }

    public List<string> ErrorMessages { get; } = [];

    /// <summary>Wall time of the whole point: server start, warm-up, window, stop.</summary>
    public double PointSeconds { get; set; }
}
