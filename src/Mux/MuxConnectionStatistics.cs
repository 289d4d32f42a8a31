namespace Mux;

/// <summary>
/// Counters of one connection since it opened, read without locks (each value is exact, the set is
/// not a snapshot). The ratios show how well the connection merges work: under load many frames
/// share one flush and one socket send.
/// </summary>
/// <param name="FramesSent">Frames written to the connection.</param>
/// <param name="Flushes">Pipe flushes; each pushes every frame written before it towards the socket.</param>
/// <param name="SocketSends">Socket send operations (a gather write counts once).</param>
/// <param name="FramesReceived">Frames read from the connection.</param>
/// <param name="Reads">Reads of the receive pipe by the frame parser.</param>
/// <param name="SocketReceives">Socket receive operations.</param>
public readonly record struct MuxConnectionStatistics(
    long FramesSent,
    long Flushes,
    long SocketSends,
    long FramesReceived,
    long Reads,
    long SocketReceives)
{
    /// <summary>Average frames per flush; 0 before the first flush.</summary>
    public double FramesPerFlush => Flushes == 0 ? 0 : (double)FramesSent / Flushes;

    /// <summary>Average frames per socket send; 0 before the first send or without a socket.</summary>
    public double FramesPerSocketSend => SocketSends == 0 ? 0 : (double)FramesSent / SocketSends;

    /// <summary>Average frames per socket receive; 0 before the first receive or without a socket.</summary>
    public double FramesPerSocketReceive => SocketReceives == 0 ? 0 : (double)FramesReceived / SocketReceives;
}
