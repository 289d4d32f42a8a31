using System.Net;

namespace Mux.Client.Balancing;

/// <summary>One server instance of a balanced client: its address, the keeper of its one
/// multiplexed connection, and what diagnostics count about it.</summary>
internal sealed class BalancedEndPoint
{
    // Calls that picked this instance (retries count again). Incremented with Interlocked by every
    // call that picks it; read by GetEndPointStatistics.
    private long _callsSent;

    public BalancedEndPoint(EndPoint endPoint) => EndPoint = endPoint;

    public EndPoint EndPoint { get; }

    /// <summary>Set once, right after construction (the keeper's callback refers to this object).</summary>
    public ConnectionKeeper Keeper { get; set; } = null!;

    public MuxClientState State => Keeper.State;

    public long CallsSent => Interlocked.Read(ref _callsSent);

    public void CountCall() => Interlocked.Increment(ref _callsSent);

    public MuxEndPointStatistics GetStatistics() =>
        new(EndPoint, State, Keeper.Latest?.PendingCallCount ?? 0, CallsSent);
}
