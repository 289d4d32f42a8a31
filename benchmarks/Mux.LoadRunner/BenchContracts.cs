using MessagePack;
using Mux.Samples.Contracts;

namespace Mux.LoadRunner;

/// <summary>The measured service: one cheap call, two list sizes and a byte payload.</summary>
[MuxService]
public interface IBenchService
{
    ValueTask<int> Add(int a, int b);

    Task<List<User>> List(int count);

    Task<byte[]> Bytes(int size);

    /// <summary>--blocking-handler: blocks the thread that runs it for <paramref name="milliseconds"/>
    /// (Thread.Sleep, as a user's bad handler would) and returns the same number.</summary>
    Task<int> Block(int milliseconds);
}

/// <summary>Asks a benchmark server for its own counters; called on a separate, short-lived
/// connection after the measured window.</summary>
[MuxService]
public interface IBenchControl
{
    Task<ServerStats> GetStats();
}

/// <summary>
/// A server's counters over the measured window (between the "begin" and "end" marks the
/// orchestrator writes to the server's stdin), and the connections accepted since it started
/// (including the control connection that asks). The counters after key 8 are newer: the raw
/// echo's binary answer and the grpc peer's proto do not carry them (they read 0 there).
/// </summary>
/// <param name="WindowMarked">Whether both marks arrived; the deltas are zero otherwise.</param>
/// <param name="CpuMicroseconds">Process CPU time (user + kernel) spent in the window.</param>
/// <param name="AllocatedBytes">Bytes allocated by the process in the window.</param>
/// <param name="Gen0">Gen-0 collections in the window.</param>
/// <param name="Gen1">Gen-1 collections in the window.</param>
/// <param name="Gen2">Gen-2 collections in the window.</param>
/// <param name="ConnectionsAccepted">Connections accepted since start, the asking one included.</param>
/// <param name="FramesSent">Raw servers and Mux: frames sent in the window (0 for the peers).</param>
/// <param name="SocketSends">Raw servers and Mux: socket sends in the window (0 for the peers).</param>
/// <param name="WorkItems">Thread-pool work items the process completed in the window.</param>
/// <param name="LockContentions">Lock contentions in the process in the window (Monitor.LockContentionCount).</param>
/// <param name="VoluntaryContextSwitches">The process's voluntary context switches in the window (getrusage).</param>
/// <param name="InvoluntaryContextSwitches">The process's involuntary context switches in the window (getrusage).</param>
/// <param name="FramesReceived">Mux: frames its connections received in the window.</param>
/// <param name="SocketReceives">Mux: socket receives of its connections in the window.</param>
/// <param name="ReaderMicroseconds">Mux: time its connections' reader loops spent in the window (stage clock).</param>
/// <param name="WriterMicroseconds">Mux: time its connections' writer roles spent in the window (stage clock).</param>
/// <param name="MetricMeasurements">With --metrics: the "Mux" meter's measurements the server's listener took in the window.</param>
/// <param name="JitMethods">Methods the JIT compiled in the window (tier-up included): well above 0 means the window ran
/// code that was still warming up.</param>
[MessagePackObject]
public sealed record ServerStats(
    [property: Key(0)] bool WindowMarked,
    [property: Key(1)] long CpuMicroseconds,
    [property: Key(2)] long AllocatedBytes,
    [property: Key(3)] long Gen0,
    [property: Key(4)] long Gen1,
    [property: Key(5)] long Gen2,
    [property: Key(6)] long ConnectionsAccepted,
    [property: Key(7)] long FramesSent,
    [property: Key(8)] long SocketSends,
    [property: Key(9)] long WorkItems = 0,
    [property: Key(10)] long LockContentions = 0,
    [property: Key(11)] long VoluntaryContextSwitches = 0,
    [property: Key(12)] long InvoluntaryContextSwitches = 0,
    [property: Key(13)] long FramesReceived = 0,
    [property: Key(14)] long SocketReceives = 0,
    [property: Key(15)] double ReaderMicroseconds = 0,
    [property: Key(16)] double WriterMicroseconds = 0,
    [property: Key(17)] long MetricMeasurements = 0,
    [property: Key(18)] long JitMethods = 0);
