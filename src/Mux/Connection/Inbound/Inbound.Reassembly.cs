using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Connection;

// A message in fragments goes on to OnFrameAsync only once whole, its payload in pooled segments; frames of other calls
// keep flowing in between. Reader loop only, except where a member says otherwise.
internal sealed partial class Inbound
{
    // Messages whose first fragment has arrived and whose last has not, by ReassemblyKey. One per key: a call's Request
    // arrives whole before the call can answer, and each side receives only one direction of a call.
    private readonly Dictionary<ulong, MessageReassembly> _reassemblies = new();

    // How many of _reassemblies count against MaxMessagesInProgress: the peer's Requests, and answers no call waits for.
    private int _boundedReassemblies;

    // The whole message being handed to OnFrameAsync, until a call takes it over or OnFrameAsync returns.
    private MessageReassembly? _deliveredMessage;

    // Bytes of pooled segments held by messages arriving here or handed over whole to calls. Changed once per 64 KiB
    // segment: by the loop as segments are rented, and by whoever releases a message (a call may, on its own thread).
    private long _reassemblyBytes;

    private readonly int _maxMessageSize;

    // Bytes of landed bins announced and not yet arrived, held under MaxMessageSize, so a peer that announces large bins
    // and sends nothing makes this side hold at most one message's worth; past that, a bin stays in pooled segments.

    private long _landingBytes;

    // How many of the peer's Requests, and of answers no call waits for, may arrive in fragments at once before the peer
    // is judged broken. The answers to this side's waiting calls are not counted: those calls bound them.
    private readonly int _maxMessagesInProgress;

    // 0 once every such message has been released, cancelled, or dropped with the connection (for tests). Any thread.
    internal long ReassemblyBytesRented => Interlocked.Read(ref _reassemblyBytes);

    internal void CountReassemblyBytes(long delta) => Interlocked.Add(ref _reassemblyBytes, delta);

    // 0 once every landed bin has arrived whole or been released (for tests). Any thread.
    internal long LandingBytesReserved => Interlocked.Read(ref _landingBytes);

    internal bool TryReserveLanding(long bytes)
    {
        if (Interlocked.Read(ref _landingBytes) + bytes > _maxMessageSize)
        {
            return false;
        }

        Interlocked.Add(ref _landingBytes, bytes);
        return true;
    }

    internal void LandedBytesArrived(long bytes) => Interlocked.Add(ref _landingBytes, -bytes);

    // A Request always (the peer's call cap bounds them); an answer only while its call, or a caller that gave up on it,
    // still waits. One nobody waits for (late, or made up) is skipped as it arrives and counts against MaxMessagesInProgress.
    private bool ExpectsMessage(in Frame first) =>
        first.Type == FrameType.Request ? IsPeersCall(RequirePeersCall(first)) : _outgoing.ExpectsAnswer(RequireOwnCall(first).CallId);

    // Any frame while some message is in fragments: it may break its call's sequence. One test of two fields per frame.
    private bool NeedsReassembly(in Frame frame) =>
        (frame.Flags & FrameFlags.MoreFragments) != 0 || frame.Type == FrameType.Continuation || _reassemblies.Count != 0;

    // Bit 32 keeps a call the server started apart from the client's call with the same id.
    private static ulong ReassemblyKey(in Frame frame) =>
        frame.CallId | ((ulong)(frame.Flags & FrameFlags.ServerInitiated) << 29);

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
            // Not a fragment: nothing to do with us when its call has no message in fragments, nor when it is credit for
            // the stream the other way (ours), which may cross the call's fragmented Response.
            if (message is null || frame.Type == FrameType.StreamCredit)
            {
                await OnFrameAsync(frame).ConfigureAwait(false);
                return;
            }

            if (frame.Type == FrameType.Cancel && message.Header.Type == FrameType.Request)
            {
                if (_outbound.IsFull)
                {
                    await OnFrameWhenRoomAsync(frame).ConfigureAwait(false); // It is answered with an Error.
                    return;
                }

                // The caller gave up while its Request was still arriving: nothing will run it.
                CancelArrivingRequest(message);
                if (_connection.Peer.EndsFragmentsOnCancel)
                {
                    Forget(key, message); // Its sender sends no more of it.
                }

                return;
            }

            ThrowSequenceBroken(
                $"A {frame.Type} frame for {DescribeCall(frame)} arrived while that call's fragmented {message.Header.Type} was still " +
                $"arriving ({message.Received} of {message.Header.PayloadSize} bytes); the rest of a fragmented message must come first, " +
                "in Continuation frames.");
        }

        if (message is null)
        {
            ThrowSequenceBroken(
                $"A Continuation frame arrived for {DescribeCall(frame)}, which has no fragmented message in progress " +
                "(a Continuation of a call the server started carries ServerInitiated, 0x08, as its first fragment does).");
        }

        if (message.Received + frame.Payload.Length > message.Header.PayloadSize)
        {
            ThrowSequenceBroken(
                $"The fragments of {DescribeCall(frame)}'s {message.Header.Type} run past the {message.Header.MessageSize} bytes " +
                "its first fragment announced.");
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
            ThrowSequenceBroken(
                $"The last fragment of {DescribeCall(frame)}'s {message.Header.Type} arrived after {message.Received} " +
                $"of the {message.Header.PayloadSize} payload bytes its first fragment announced.");
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
            // Unless a call took the segments over (it releases them), the role copied what it keeps.
            if (_deliveredMessage == message)
            {
                message.Release();
            }

            _deliveredMessage = null;
        }
    }

    // The memory goes back at once, the call never runs, and it is answered Error Canceled now (its caller counts it until an
    // answer comes). The rest of the Request, if still sent, is read and dropped; one already answered gets nothing more.
    private void CancelArrivingRequest(MessageReassembly request)
    {
        if (request.IsSkipped)
        {
            return;
        }

        request.Abandon();
        var body = new ErrorBody(
            MuxStatusCode.Canceled,
            $"{MuxServiceRegistry.GetMethodDisplayName(request.Header.MethodId)} was canceled before its request had arrived whole; it was not run.",
            null);
        _outbound.TrySendFrame(FrameType.Error, request.Header.CallId, ref body, request.Header.Flags & FrameFlags.ServerInitiated);
    }

    /// <summary>Takes over the segments of the message being handed on when <paramref name="payload"/> is its whole payload,
    /// instead of a copy: the caller must <see cref="MessageReassembly.Release"/> them once. Null for any other frame.</summary>
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
        if (!_handshakeDone)
        {
            // A peer not yet authenticated must not make this side hold MaxMessageSize for every call it might have.
            throw new MuxProtocolException(
                $"The handshake comes first and whole; the {_connection.PeerName} sent the first fragment of a {first.Type}.");
        }

        ulong key = ReassemblyKey(first);
        if (_reassemblies.TryGetValue(key, out MessageReassembly? existing))
        {
            string call = DescribeCall(first);
            ThrowSequenceBroken(
                $"{char.ToUpperInvariant(call[0])}{call[1..]} started a fragmented {first.Type} while its fragmented {existing.Header.Type} " +
                "was still arriving; a call sends one message at a time in each direction.");
        }

        bool expected = ExpectsMessage(first);
        bool bounded = !expected || IsPeersCall(first);
        if (bounded)
        {
            if (_boundedReassemblies >= _maxMessagesInProgress)
            {
                ThrowSequenceBroken(
                    $"The peer has {_boundedReassemblies} fragmented messages arriving at once, more than the {_maxMessagesInProgress} calls " +
                    "it may have outstanding on this connection.");
            }

            _boundedReassemblies++;
        }

        bool tooLarge = first.MessageSize > (uint)_maxMessageSize;
        _reassemblies.Add(key, new MessageReassembly(first, skip: tooLarge || !expected, owner: this) { IsBounded = bounded });
        if (tooLarge && first.Type == FrameType.Request)
        {
            // The rest is read and dropped; the role it belongs to fails its one call (the connection stays up).
            _incoming.OnRequestTooLarge(first);
        }
        else if (tooLarge)
        {
            _outgoing.OnAnswerTooLarge(first);
        }
    }

    private void Forget(ulong key, MessageReassembly message)
    {
        _reassemblies.Remove(key);
        if (message.IsBounded)
        {
            _boundedReassemblies--;
        }
    }

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
