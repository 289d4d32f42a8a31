using System.Diagnostics;
using Mux.Diagnostics;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// The caller role of a connection: the calls this side makes to its peer, on either side (a
/// client's calls to its server, a server's calls to its client). It numbers them in this side's
/// id space, keeps each in its pending table (<see cref="CallTable{TCall}"/>) until it completes exactly once
/// (answer, remote error, deadline, the caller's token, GoAway, connection loss), honours the
/// peer's call cap (<see cref="CallSlots"/>) and the outbound limit, and tells the peer when a
/// caller gives up (Cancel).
/// </summary>
/// <remarks>
/// Its parts, by job: here its state and what the peer's handshake says; OutgoingCalls.Send.cs
/// starts a call, .Wait.cs is the wait of one that cannot be sent at once, .Request.cs its id and
/// Request frame, .GiveUp.cs its deadline and its caller's token, .Answers.cs the peer's answers,
/// .Close.cs GoAway and the close, .Streams.cs the streams of streaming calls.
/// </remarks>
internal sealed partial class OutgoingCalls
{
    private readonly MuxConnection _connection;
    private readonly Outbound _outbound;

    // Calls waiting for their answer, by id, and those waiting for a slot (see CallSlots): added by
    // callers, removed by whoever completes them (the answer's worker, the expiry scan, a
    // cancellation, GoAway, the close).
    private readonly CallTable<PendingCall> _pending = new(ExpectedCalls);

    // About how many calls a connection has in the table, which presizes it; the calls waiting for
    // a slot are there too, and past this the table grows (once: its size is kept).
    private const int ExpectedCalls = 1024;

    // The id space of these calls, carried by every frame of them: ServerInitiated for a server's
    // calls to its client, none for a client's. Immutable.
    private readonly FrameFlags _idSpace;

    // The side's timeout for its calls (CallTimeout or ClientCallTimeout), for the expiry scan's
    // period and the timeout's message. Immutable.
    private readonly TimeSpan _timeout;

    // Set (once) when the peer sent GoAway, or this side stopped sending (StopSending): new calls
    // fail at once. Written by the reader loop, or by StopSending's caller.
    private volatile bool _goingAway;

    // The peer's maxConcurrentCalls, honoured here: a call holds a slot from before its Request is
    // sent until the peer's answer for it arrives. Replaced by the reader loop from the peer's
    // handshake, before any call; used by callers after.
    private volatile CallSlots _slots = new(int.MaxValue);

    // Calls the caller gave up on (cancelled or timed out) whose answer has not arrived yet: their
    // slots stay taken until it does, because the peer still counts them. Guarded by itself;
    // touched only on those rare paths. A call leaves the table for this set under its lock, so an
    // answer the reader cannot find in the table is found here (see TakeAnswered).
    private readonly HashSet<uint> _abandoned = [];

    // _abandoned.Count, written under its lock (AbandonLocked, ForgetAbandonedLocked); read without
    // it by TryAddPending once ids have come round, which takes the lock only when this is not 0.
    private volatile int _abandonedCount;


    public OutgoingCalls(MuxConnection connection, TimeSpan timeout)
    {
        _connection = connection;
        _outbound = connection.Outbound;
        _timeout = timeout;
        _idSpace = connection.IsServer ? FrameFlags.ServerInitiated : FrameFlags.None;
    }

    public MuxConnection Connection => _connection;

    /// <summary>Calls sent and waiting for their answer now, not counting those that wait for a slot
    /// (read without a lock; exact at quiet moments).</summary>
    public int Count => Math.Max(0, _pending.Count - _slots.Queued);

    /// <summary>Whether the peer sent GoAway, or this side stopped sending: no new call is sent.</summary>
    public bool IsGoingAway => _goingAway;

    /// <summary>Set by a client that closes for good (its dispose) before it closes this connection:
    /// what a call the close leaves unsent fails with instead of "not sent", safe to retry, which
    /// would have a caller retry on a client that sends nothing again. Read only by those failures.</summary>
    public Func<MuxConnectionException>? LeftUnsentByClose { get; set; }

    /// <summary>Call slots free now, and calls given up on whose answer has not come (for tests:
    /// at a quiet moment the first is the peer's cap and the second 0, or a slot leaked).</summary>
    internal (int FreeSlots, int Abandoned) SlotAccount
    {
        get
        {
            lock (_abandoned)
            {
                return (_slots.Free, _abandoned.Count);
            }
        }
    }

    /// <summary>Notes a call given up on, just taken out of the table: its answer, still to come,
    /// frees its slot. Under _abandoned's lock.</summary>
    private void AbandonLocked(uint callId)
    {
        Debug.Assert(Monitor.IsEntered(_abandoned));
        _abandoned.Add(callId);
        _abandonedCount = _abandoned.Count;
    }

    /// <summary>Forgets a call given up on (its answer came, or its Request never went out): true
    /// when it was among them. Under _abandoned's lock.</summary>
    private bool ForgetAbandonedLocked(uint callId)
    {
        Debug.Assert(Monitor.IsEntered(_abandoned));
        bool forgotten = _abandoned.Remove(callId);
        _abandonedCount = _abandoned.Count;
        return forgotten;
    }

    /// <summary>The server's address and port for span tags; null in memory or on a server. Set
    /// once, before any call.</summary>
    public ServerPeer? Peer { get; set; }

    // The connection's clock: deadlines are its timestamps.
    private TimeProvider Clock => _connection.TimeProvider;

    /// <summary>Takes the peer's cap on these calls from its handshake, before any call.</summary>
    public void OnPeerSettings(in PeerSettings peer) => _slots = new CallSlots(peer.MaxConcurrentCalls);

    /// <summary>Throws unless the peer takes streams on these calls: a client of an older Mux does
    /// not on its server's calls, and would close the connection on their frames.</summary>
    public void RequireStreams()
    {
        if (!_connection.Peer.TakesStreams)
        {
            throw new NotSupportedException($"The Mux {_connection.PeerName} at {_connection.Name} does not take IAsyncEnumerable streams on the calls its server starts (it did not announce serverCallStreams: an older Mux); call it with methods that take and return no stream.");
        }
    }
}
