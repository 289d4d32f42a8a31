namespace Mux.LoadRunner.Peers;

/// <summary>
/// A peer server's counters: the window marks and the TCP connections it accepted. Each peer
/// answers its own GetStats call with them, over its own protocol on a separate connection, the
/// way Mux's IBenchControl does.
/// </summary>
internal sealed class PeerStats
{
    // TCP connections accepted since start: incremented by the peer's accept path (Kestrel's
    // connection middleware or the StreamJsonRpc accept loop), read by GetStatsAsync.
    private long _connectionsAccepted;

    /// <summary>The peers expose no frame counters, so the marks record none.</summary>
    public WindowMarks Marks { get; } = new(static () => default);

    public void ConnectionAccepted() => Interlocked.Increment(ref _connectionsAccepted);

    public Task<ServerStats> GetStatsAsync() => Marks.GetStatsAsync(() => Interlocked.Read(ref _connectionsAccepted));
}
