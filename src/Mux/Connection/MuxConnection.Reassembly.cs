using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Connection;

// The read side of fragmented messages (docs/protocol.md, *Fragments*): the reader loop hands
// every fragment here; a message is handed to OnFrameAsync only once whole, as one frame whose
// payload is a pooled buffer instead of a slice of the receive buffer. Frames of other calls keep
// flowing in between. Everything here runs on the reader loop only.
internal abstract partial class MuxConnection
{
    // Messages whose first fragment has arrived and whose last has not, by call id (one per call:
    // a call's Request arrives whole before the call can answer). Reader loop only.
    private readonly Dictionary<uint, MessageReassembly> _reassemblies = new();

    /// <summary>The largest message (all its fragments after their common headers) this side
    /// accepts; a larger one fails its call, not the connection. Set by a subclass's constructor.</summary>
    protected int MaxMessageSize { get; init; } = int.MaxValue;

    /// <summary>How many messages may be arriving in fragments at once before the peer is judged
    /// broken. Set by a subclass's constructor (the server: its call cap).</summary>
    protected int MaxMessagesInProgress { get; init; } = int.MaxValue;

    /// <summary>Whether the reader loop must route this frame through <see cref="OnFragmentAsync"/>:
    /// a fragment, or any frame while some message is in fragments (it may be a call's frame that
    /// breaks its message's sequence). One test of two fields on the way of every frame.</summary>
    private bool NeedsReassembly(in Frame frame) =>
        (frame.Flags & FrameFlags.MoreFragments) != 0 || frame.Type == FrameType.Continuation || _reassemblies.Count != 0;

    /// <summary>
    /// Called on the reader loop when the first fragment of a message over
    /// <see cref="MaxMessageSize"/> arrives. The rest of the message will be read and dropped; the
    /// subclass fails the one call it belongs to (the connection stays up).
    /// </summary>
    protected abstract void OnMessageTooLarge(in Frame first);

    private async ValueTask OnFragmentAsync(Frame frame)
    {
        if (frame.IsFirstFragment)
        {
            StartMessage(frame);
            return;
        }

        if (frame.Type != FrameType.Continuation)
        {
            if (!_reassemblies.TryGetValue(frame.CallId, out MessageReassembly? interrupted))
            {
                // Not a fragment, and its call has no message in fragments: nothing to do with us.
                await OnFrameAsync(frame).ConfigureAwait(false);
                return;
            }

            if (frame.Type == FrameType.Cancel)
            {
                // The caller gave up while its Request was still arriving: the handler is
                // cancelled as soon as the Request is whole and has been dispatched.
                interrupted.CancelPending = true;
                return;
            }

            ThrowSequenceBroken($"A {frame.Type} frame for call {frame.CallId} arrived while that call's fragmented {interrupted.Type} was still arriving ({interrupted.Received} of {interrupted.PayloadSize} bytes); the rest of a fragmented message must come first, in Continuation frames.");
        }

        if (!_reassemblies.TryGetValue(frame.CallId, out MessageReassembly? message))
        {
            ThrowSequenceBroken($"A Continuation frame arrived for call {frame.CallId}, which has no fragmented message in progress.");
        }

        if (message.Received + frame.Payload.Length > message.PayloadSize)
        {
            ThrowSequenceBroken($"The fragments of call {frame.CallId}'s {message.Type} run past the {message.MessageSize} bytes its first fragment announced.");
        }

        message.Append(frame.Payload);
        if ((frame.Flags & FrameFlags.MoreFragments) != 0)
        {
            return;
        }

        _reassemblies.Remove(frame.CallId);
        if (message.Received != message.PayloadSize)
        {
            message.Release();
            ThrowSequenceBroken($"The last fragment of call {frame.CallId}'s {message.Type} arrived after {message.Received} of the {message.PayloadSize} payload bytes its first fragment announced.");
        }

        if (message.IsSkipped)
        {
            return; // Over MaxMessageSize: its call has already been failed.
        }

        try
        {
            await OnFrameAsync(message.ToFrame()).ConfigureAwait(false);
            if (message.CancelPending && !IsClosed)
            {
                await OnFrameAsync(new Frame(FrameType.Cancel, FrameFlags.None, message.CallId, 0, default)).ConfigureAwait(false);
            }
        }
        finally
        {
            // The subclass copied what it keeps (as it does from the receive buffer).
            message.Release();
        }
    }

    private void StartMessage(in Frame first)
    {
        if (_reassemblies.TryGetValue(first.CallId, out MessageReassembly? existing))
        {
            ThrowSequenceBroken($"Call {first.CallId} started a fragmented {first.Type} while its fragmented {existing.Type} was still arriving; a call sends one message at a time in each direction.");
        }

        if (_reassemblies.Count >= MaxMessagesInProgress)
        {
            ThrowSequenceBroken($"The peer has {_reassemblies.Count} fragmented messages arriving at once, more than the {MaxMessagesInProgress} calls it may have outstanding on this connection.");
        }

        bool tooLarge = first.MessageSize > (uint)MaxMessageSize;
        _reassemblies.Add(first.CallId, new MessageReassembly(first, skip: tooLarge));
        if (tooLarge)
        {
            OnMessageTooLarge(first);
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
    }

    [DoesNotReturn]
    private static void ThrowSequenceBroken(string message) => throw new MuxProtocolException(message);
}
