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
/// (including the control connection that asks).
/// </summary>
/// <param name="WindowMarked">Whether both marks arrived; the deltas are zero otherwise.</param>
/// <param name="CpuMicroseconds">Process CPU time (user + kernel) spent in the window.</param>
/// <param name="AllocatedBytes">Bytes allocated by the process in the window.</param>
/// <param name="Gen0">Gen-0 collections in the window.</param>
/// <param name="Gen1">Gen-1 collections in the window.</param>
/// <param name="Gen2">Gen-2 collections in the window.</param>
/// <param name="ConnectionsAccepted">Connections accepted since start, the asking one included.</param>
/// <param name="FramesSent">Raw servers only: frames sent in the window (0 for Mux).</param>
/// <param name="SocketSends">Raw servers only: socket sends in the window (0 for Mux).</param>
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
    [property: Key(8)] long SocketSends);
