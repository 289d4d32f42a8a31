using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Connection;

// The read side of fragmented messages (docs/protocol.md, *Fragments*): the reader loop hands
// every fragment here; a message is handed to OnFrameAsync only once whole, as one frame whose
// payload is a pooled buffer instead of a slice of the receive buffer. Frames of other calls keep
// flowing in between. Everything here runs on the reader loop only.
internal abstract partial class MuxConnection
{
    // Messages whose first fragment has arrived and whose last has not, by ReassemblyKey: the call
    // id and its id space (ServerInitiated), since a client's call and a server's call may carry the
    // same id at once. One per key: a call's Request arrives whole before the call can answer, and
    // each side receives only one direction of a call. Reader loop only.
    private readonly Dictionary<ulong, MessageReassembly> _reassemblies = new();

    // How many of _reassemblies count against MaxMessagesInProgress: the peer's Requests, and
    // answers no call waits for (see ExpectsMessage). Reader loop only.
    private int _boundedReassemblies;

    // The whole message being handed to OnFrameAsync, until a call takes it over
    // (TakeDeliveredMessage) or OnFrameAsync returns. Reader loop only.
    private MessageReassembly? _deliveredMessage;

    // Bytes of the segments the messages arriving here, or handed over whole to calls, hold rented
    // from the segment pool. Changed once per 64 KiB segment, never per small frame: by the
    // reader loop as segments are rented, and by whoever releases a message (a call may, on its own
    // thread). Read by tests and diagnostics.
    private long _reassemblyBytes;

    /// <summary>Bytes of pooled arrays held by messages that arrived in fragments and have not been
    /// released yet (for tests and diagnostics): 0 once every such message has been handed on and
    /// released, cancelled, or dropped with the connection.</summary>
    internal long ReassemblyBytesRented => Interlocked.Read(ref _reassemblyBytes);

    /// <summary>Counts a segment rented (positive) or returned (negative) by a <see cref="MessageReassembly"/>.</summary>
    internal void CountReassemblyBytes(long delta) => Interlocked.Add(ref _reassemblyBytes, delta);

    /// <summary>The largest message (all its fragments after their common headers) this side
    /// accepts; a larger one fails its call, not the connection. Set by a subclass's constructor.</summary>
    internal int MaxMessageSize { get; init; } = int.MaxValue;

    /// <summary>How many of the peer's Requests, and how many answers no call waits for, may each
    /// be arriving in fragments at once before the peer is judged broken. Set by a subclass's
    /// constructor (the server: its call cap). The answers to this side's own calls still waiting
    /// are not counted: those calls bound them.</summary>
    protected int MaxMessagesInProgress { get; init; } = int.MaxValue;

    /// <summary>Whether some call here waits for the message this first fragment starts: a Request
    /// always does (the peer's call cap bounds them); an answer only while its call, or a caller
    /// that gave up on it, still waits (that answer frees the call's slot). One that nobody waits
    /// for (a late answer, or one a broken peer made up) is skipped as it arrives, like one over
    /// MaxMessageSize but failing nothing, and counts against MaxMessagesInProgress.</summary>
    private bool ExpectsMessage(in Frame first) =>
        first.Type == FrameType.Request ? IsPeersCall(RequirePeersCall(first)) : Outgoing.ExpectsAnswer(RequireOwnCall(first).CallId);

    /// <summary>Whether the reader loop must route this frame through <see cref="OnFragmentAsync"/>:
    /// a fragment, or any frame while some message is in fragments (it may be a call's frame that
    /// breaks its message's sequence). One test of two fields on the way of every frame.</summary>
    private bool NeedsReassembly(in Frame frame) =>
        (frame.Flags & FrameFlags.MoreFragments) != 0 || frame.Type == FrameType.Continuation || _reassemblies.Count != 0;

    /// <summary>Where a call's message is kept while it arrives: its id in the low 32 bits, and
    /// bit 32 set for a call the server started (its frames, Continuations included, carry
    /// ServerInitiated), so the two id spaces never share an entry.</summary>
    private static ulong ReassemblyKey(in Frame frame) =>
        frame.CallId | ((ulong)(frame.Flags & FrameFlags.ServerInitiated) << 29);

    /// <summary>"call 5" or "server-initiated call 5", for messages about broken sequences.</summary>
    private static string DescribeCall(in Frame frame) =>
        (frame.Flags & FrameFlags.ServerInitiated) != 0 ? $"server-initiated call {frame.CallId}" : $"call {frame.CallId}";

    private async ValueTask OnFragmentAsync(Frame frame)
    {
        if (frame.IsFirstFragment)
        {
            StartMessage(frame);
            return;
        }

        ulong key = ReassemblyKey(frame);
        _reassemblies.TryGetValue(key, out MessageReassembly? message);
        if (frame.Type != FrameType.Continuation)
        {
            // Not a fragment: nothing to do with us when its call has no message in fragments, nor
            // when it is credit for the stream the other way (ours), which may cross the call's
            // fragmented Response, queued by the peer while it was still reading our items.
            if (message is null || frame.Type == FrameType.StreamCredit)
            {
                await OnFrameAsync(frame).ConfigureAwait(false);
                return;
            }

            if (frame.Type == FrameType.Cancel && message.Header.Type == FrameType.Request)
            {
                if (IsOutboundFull)
                {
                    await OnFrameWhenOutboundRoomAsync(frame).ConfigureAwait(false); // It is answered with an Error.
                    return;
                }

                // The caller gave up while its Request was still arriving: nothing will run it.
                CancelArrivingRequest(message);
                if (PeerEndsFragmentsOnCancel)
                {
                    Forget(key, message); // Its sender sends no more of it.
                }

                return;
            }

            ThrowSequenceBroken($"A {frame.Type} frame for {DescribeCall(frame)} arrived while that call's fragmented {message.Header.Type} was still arriving ({message.Received} of {message.Header.PayloadSize} bytes); the rest of a fragmented message must come first, in Continuation frames.");
        }

        if (message is null)
        {
            ThrowSequenceBroken($"A Continuation frame arrived for {DescribeCall(frame)}, which has no fragmented message in progress (a Continuation of a call the server started carries ServerInitiated, 0x08, as its first fragment does).");
        }

        if (message.Received + frame.Payload.Length > message.Header.PayloadSize)
        {
            ThrowSequenceBroken($"The fragments of {DescribeCall(frame)}'s {message.Header.Type} run past the {message.Header.MessageSize} bytes its first fragment announced.");
        }

        message.Append(frame.Payload);
        if ((frame.Flags & FrameFlags.MoreFragments) != 0)
        {
            return;
        }

        Forget(key, message);
        if (message.Received != message.Header.PayloadSize)
        {
            message.Release();
            ThrowSequenceBroken($"The last fragment of {DescribeCall(frame)}'s {message.Header.Type} arrived after {message.Received} of the {message.Header.PayloadSize} payload bytes its first fragment announced.");
        }

        if (message.IsSkipped)
        {
            return; // Over MaxMessageSize or cancelled: its call has already been answered.
        }

        _deliveredMessage = message;
        try
        {
            await OnFrameAsync(message.ToFrame()).ConfigureAwait(false);
        }
        finally
        {
            // Unless a call took the segments over, the subclass copied what it keeps (as it does
            // from the receive buffer). A taken message is the call's to release, maybe already.
            if (_deliveredMessage == message)
            {
                message.Release();
            }

            _deliveredMessage = null;
        }
    }

    /// <summary>
    /// A Cancel for a call whose Request is still arriving in fragments (docs/protocol.md,
    /// *Fragments*): the pooled memory goes back at once, the call never runs, and it is answered
    /// Error Canceled now, in its own id space: the caller's side counts the call as outstanding
    /// until an answer comes. The rest of the Request, if its sender still sends it (without
    /// cancelEndsFragments), is read and dropped as it arrives. A Request already answered (over
    /// MaxMessageSize) gets nothing more.
    /// </summary>
    private void CancelArrivingRequest(MessageReassembly request)
    {
        if (request.IsSkipped)
        {
            return;
        }

        request.Abandon();
        var body = new ErrorBody(MuxStatusCode.Canceled, $"{MuxServiceRegistry.GetMethodDisplayName(request.Header.MethodId)} was canceled before its request had arrived whole; it was not run.", null);
        TrySendFrame(FrameType.Error, request.Header.CallId, ref body, request.Header.Flags & FrameFlags.ServerInitiated);
    }

    /// <summary>
    /// Takes over the buffers of the reassembled message being handed to <see cref="OnFrameAsync"/>
    /// when <paramref name="payload"/> is its whole payload, instead of copying them: the caller
    /// keeps them past OnFrameAsync and must <see cref="MessageReassembly.Release"/> them once.
    /// Null for any other frame (then copy, as from the receive buffer). Reader loop only.
    /// </summary>
    internal MessageReassembly? TakeDeliveredMessage(in ReadOnlySequence<byte> payload)
    {
        MessageReassembly? message = _deliveredMessage;
        if (message is null || !message.IsWholePayload(payload))
        {
            return null;
        }

        _deliveredMessage = null;
        return message;
    }

    private void StartMessage(in Frame first)
    {
        if (!IsHandshakeDone)
        {
            // Not even reassembled: before Hello (or while it is authenticated) a peer must not make
            // this side hold MaxMessageSize for every call it might have.
            throw new MuxProtocolException($"The handshake comes first and whole; the {PeerName} sent the first fragment of a {first.Type}.");
        }

        ulong key = ReassemblyKey(first);
        if (_reassemblies.TryGetValue(key, out MessageReassembly? existing))
        {
            string call = DescribeCall(first);
            ThrowSequenceBroken($"{char.ToUpperInvariant(call[0])}{call[1..]} started a fragmented {first.Type} while its fragmented {existing.Header.Type} was still arriving; a call sends one message at a time in each direction.");
        }

        bool expected = ExpectsMessage(first);
        bool bounded = !expected || IsPeersCall(first);
        if (bounded)
        {
            if (_boundedReassemblies >= MaxMessagesInProgress)
            {
                ThrowSequenceBroken($"The peer has {_boundedReassemblies} fragmented messages arriving at once, more than the {MaxMessagesInProgress} calls it may have outstanding on this connection.");
            }

            _boundedReassemblies++;
        }

        bool tooLarge = first.MessageSize > (uint)MaxMessageSize;
        _reassemblies.Add(key, new MessageReassembly(first, skip: tooLarge || !expected, owner: this) { IsBounded = bounded });
        if (tooLarge && first.Type == FrameType.Request)
        {
            // The rest of the message is read and dropped; the role it belongs to fails its one
            // call (the connection stays up). ExpectsMessage has checked whose call it is.
            Incoming.OnRequestTooLarge(first);
        }
        else if (tooLarge)
        {
            Outgoing.OnAnswerTooLarge(first);
        }
    }

    /// <summary>Drops a message's entry once its last fragment has arrived.</summary>
    private void Forget(ulong key, MessageReassembly message)
    {
        _reassemblies.Remove(key);
        if (message.IsBounded)
        {
            _boundedReassemblies--;
        }
    }

    /// <summary>Returns the buffers of messages still arriving when the connection closes. Called
    /// by the reader loop as it ends.</summary>
    private void ReleaseReassemblies()
    {
        foreach (MessageReassembly message in _reassemblies.Values)
        {
            message.Release();
        }

        _reassemblies.Clear();
        _boundedReassemblies = 0;
    }

    [DoesNotReturn]
    private static void ThrowSequenceBroken(string message) => throw new MuxProtocolException(message);
}
