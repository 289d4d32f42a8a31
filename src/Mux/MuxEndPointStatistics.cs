using System.Net;

namespace Mux;

/// <summary>
/// What a client that spreads its calls over several server instances knows about one of them
/// (<see cref="MuxClient.GetEndPointStatistics"/>). Read without locks: each value is exact, the set
/// is not a snapshot.
/// </summary>
/// <param name="EndPoint">The instance's address.</param>
/// <param name="State">Its connection's state: <see cref="MuxClientState.Connected"/> while it takes
/// calls, <see cref="MuxClientState.Reconnecting"/> after it was lost or sent GoAway.</param>
/// <param name="PendingCalls">Calls waiting for their response from it right now.</param>
/// <param name="CallsSent">Calls sent to it since the client started (a call retried on it after it
/// failed elsewhere counts once more).</param>
public readonly record struct MuxEndPointStatistics(
    EndPoint EndPoint,
    MuxClientState State,
    int PendingCalls,
    long CallsSent);
