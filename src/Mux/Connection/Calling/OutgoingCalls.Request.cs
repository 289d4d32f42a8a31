using System.Diagnostics;
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

    // The last call id of the last block handed out (see NextCallId); advanced a block at a time.
    private int _lastCallId;

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

            trace = _peerReadsTraceContext ? call.Telemetry.Activity ?? Activity.Current : null;
            // The header carries a W3C traceparent: an activity of another ID format has none to send.
            if (trace is not null && trace.IdFormat != ActivityIdFormat.W3C)
            {
                trace = null;
            }
        }

        var body = new RequestBody<MessagePackBody<TArguments>>(new MessagePackBody<TArguments>(arguments, _connection.SerializerOptions), remaining, trace, metadata);
        _outbound.SendFrame(FrameType.Request, call.CallId, methodId, ref body, _idSpace | body.Flags, whenWritten);
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
                next = (uint)Interlocked.Add(ref _lastCallId, (int)IdBlockSize) - IdBlockSize + 1;
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
}
