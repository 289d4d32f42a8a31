using System.Diagnostics;
using System.Runtime.CompilerServices;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;

namespace Mux.Connection;

// A call's id and its Request frame: the id taken from this core's block, and the Request written
// with the headers it needs (trace context, deadline, metadata) before its arguments.
internal sealed partial class OutgoingCalls
{
    // Ids are handed out in blocks of this many to each core (_idBlocks), so that callers on
    // different cores do not all increment one counter.
    private const uint IdBlockSize = 64;

    // How many ids the blocks handed out so far hold (see NextCallId), the last of them the low 32
    // bits; advanced a block at a time. 64 bits, so that a block knows when the ids come round.
    private long _lastCallId;

    // Set once the ids have come round (2^32 of them handed out): from then on an id may still be
    // in use, by a call waiting for its answer or one given up on whose answer is still to come
    // (TryAddPending). Written before the first such block is published; never cleared.
    private volatile bool _idsCameRound;

    // Each core's block of ids (see NextCallId): the next id (low 32 bits) and the end of the
    // block (high 32 bits, exclusive), packed in one long so that a compare-and-swap takes an id.
    // Written by callers on that core.
    private readonly CoreStripe[] _idBlocks = new CoreStripe[StripedCounter.StripeCount];

    /// <summary>Sends the call's Request: its arguments, after the headers it needs. Its metadata
    /// section when it has one (<paramref name="metadata"/>, checked against the peer's limit
    /// already); and, on a client's call, its deadline (what is left of it at <paramref name="now"/>)
    /// and the caller's trace context (when the peer reads it). A server's calls to its client carry
    /// neither (docs/protocol.md, "Calls from server to client").</summary>
    private void SendRequest<TArguments>(PendingCall call, uint methodId, in TArguments arguments, long now, CallStreams? whenWritten, byte[]? metadata)
        where TArguments : struct
    {
        var body = RequestBodyOf(call, arguments, now, metadata);
        _outbound.SendFrame(FrameType.Request, call.CallId, methodId, ref body, _idSpace | body.Flags, whenWritten);
    }

    /// <summary>Encodes the call's Request as <see cref="SendRequest"/> would send it, into the call's
    /// own buffer, for whoever frees a slot to send (a call that waits for one).</summary>
    private void EncodeRequest<TArguments>(PendingCall call, uint methodId, in TArguments arguments, long now, byte[]? metadata)
        where TArguments : struct
    {
        var body = RequestBodyOf(call, arguments, now, metadata);
        call.QueuedWithDeadline = (body.Flags & FrameFlags.Deadline) != 0;
        _outbound.EncodeRequest(call.CallId, methodId, ref body, _idSpace | body.Flags, call.QueuedFrame ??= new PooledBufferWriter(), out call.QueuedMessage, out call.QueuedMessageLength);
    }

    private RequestBody<MessagePackBody<TArguments>> RequestBodyOf<TArguments>(PendingCall call, in TArguments arguments, long now, byte[]? metadata)
        where TArguments : struct
    {
        uint? remaining = null;
        Activity? trace = null;
        if (_idSpace == FrameFlags.None)
        {
            if (call.Deadline.IsSet)
            {
                // now is the caller's latest reading: taken when the call was made when it is sent at
                // once, or after its last wait; so the peer's clock starts from what is really left.
                remaining = DeadlineHeader.RemainingMilliseconds(call.Deadline.At, now, Clock.TimestampFrequency);
            }

            trace = _connection.Peer.ReadsTraceContext ? call.Telemetry.Activity ?? Activity.Current : null;
            // The header carries a W3C traceparent: an activity of another ID format has none to send.
            if (trace is not null && trace.IdFormat != ActivityIdFormat.W3C)
            {
                trace = null;
            }
        }

        return new RequestBody<MessagePackBody<TArguments>>(new MessagePackBody<TArguments>(arguments, _connection.SerializerOptions), remaining, trace, metadata);
    }

    /// <summary>
    /// The next call id: from this core's block, taking a new block of <see cref="IdBlockSize"/>
    /// from the connection's counter when it runs out. One compare-and-swap on a line of this core's
    /// per call, one shared increment per block. Ids reach the wire out of order across cores, as
    /// they always could across threads; nothing relies on their order (GoAway serves every id up
    /// to the one it carries, whenever it arrives). 0 is reserved for the connection.
    /// </summary>
    private uint NextCallId()
    {
        ref long block = ref _idBlocks[Thread.GetCurrentProcessorId() & (StripedCounter.StripeCount - 1)].Value;
        while (true)
        {
            long current = Volatile.Read(ref block);
            uint next = (uint)current;
            uint end = (uint)(current >> 32);
            if (next == end)
            {
                // The block is used up (or never taken): take a new one.
                long last = Interlocked.Add(ref _lastCallId, IdBlockSize);
                if (last > uint.MaxValue && !_idsCameRound)
                {
                    _idsCameRound = true; // Before the block is published below, and so before any of its ids.
                }

                next = (uint)last - IdBlockSize + 1;
                end = next + IdBlockSize;
            }

            if (Interlocked.CompareExchange(ref block, ((long)end << 32) | (next + 1), current) != current)
            {
                continue; // Another thread on this core took an id (or a block) meanwhile: its block stands.
            }

            if (next != 0)
            {
                return next;
            }
        }
    }

    /// <summary>
    /// Adds the call to the pending table under the id it was just given: false when that id is
    /// still in use (the ids came round to it), by a call waiting for its answer or by one given up
    /// on whose answer is still to come (its late answer would complete this call, and a peer still
    /// running it would close the connection on the reused id); or when the table is closed
    /// (<paramref name="closed"/>).
    /// </summary>
    private bool TryAddPending(PendingCall call, out bool closed)
    {
        // Until the ids come round every id is new; after, most calls find no call given up on.
        if (!_idsCameRound || _abandonedCount == 0)
        {
            return _pending.TryAdd(call, out closed);
        }

        return TryAddPendingUnlessAbandoned(call, out closed);
    }

    /// <summary>The rare path of <see cref="TryAddPending"/>, under the lock every move from the
    /// table to the abandoned calls holds, so none comes between the look and the add. (The fast
    /// path reads the count without it: a call given up on in the few instructions between that
    /// read and its add would be missed, but only one that had waited through all 2^32 ids.)</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool TryAddPendingUnlessAbandoned(PendingCall call, out bool closed)
    {
        lock (_abandoned)
        {
            closed = false;
            return !_abandoned.Contains(call.CallId) && _pending.TryAdd(call, out closed);
        }
    }

    /// <summary>For tests: the ids come round now, as after 2^32 calls: the next block is 1 to 64
    /// again (every core takes a new one). Only while no call is starting.</summary>
    internal void WrapCallIds()
    {
        Volatile.Write(ref _lastCallId, 1L << 32);
        Array.Clear(_idBlocks);
    }
}
