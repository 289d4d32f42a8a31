using System.Buffers;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// One message arriving in fragments (docs/protocol.md, *Fragments*): what its first fragment said, and its payload so far
/// in 64 KiB segments from <see cref="BufferSegmentPool"/>, added as bytes arrive (so memory follows what the peer sent,
/// never what it announced) and returned once the message has been handed on, or by the call that took it over
/// (<see cref="Inbound.TakeDeliveredMessage"/>) and deserializes straight from them. A message over MaxMessageSize keeps
/// no bytes: it is only counted until its last fragment. Filled by the reader loop only.
/// </summary>
/// <remarks>
/// Segments, never one growing array: growing one put a copy of up to 64 MiB on the reader loop, during which no small
/// call's frame was read; and 64 KiB stays below the large object heap, from a pool that keeps enough of them for a
/// message rented on the reader loop and returned by a call on a worker.
/// </remarks>
internal sealed class MessageReassembly
{
    // The payload so far, first to last, linked as a ReadOnlySequence: fragments go straight into segments.
    private readonly MessageBufferWriter _bytes;

    // The read side whose reassembly memory this message counts in; null in unit tests.
    private readonly Inbound? _owner;

    public MessageReassembly(in Frame first, bool skip, Inbound? owner = null, BufferSegmentPool? pool = null)
    {
        _owner = owner;
        _bytes = new MessageBufferWriter(pool ?? BufferSegmentPool.Shared);
        IsSkipped = skip;

        // The trace context is a slice of the receive buffer, so it is copied: at most ~600 bytes, once per big message.
        ReadOnlySequence<byte> traceContext = first.TraceContext.IsEmpty || skip ? default : new(first.TraceContext.ToArray());
        Header = new Frame(
            first.Type, first.Flags & ~FrameFlags.MoreFragments, first.CallId, first.MethodId, default, traceContext, first.RemainingMilliseconds,
            first.MessageSize, first.PayloadSize);
        Append(first.Payload);
    }

    // The first fragment less MoreFragments and its payload, with the sizes it announced.
    public Frame Header { get; }

    // Over MaxMessageSize, awaited by no call, or abandoned: its bytes are counted and dropped.
    public bool IsSkipped { get; private set; }

    // Counted against MaxMessagesInProgress while it arrives.
    public bool IsBounded { get; init; }

    public long Received { get; private set; }

    // The caller has checked that the bytes fit the announced size.
    public void Append(in ReadOnlySequence<byte> bytes)
    {
        Received += bytes.Length;
        if (IsSkipped || bytes.IsEmpty)
        {
            return;
        }

        BufferSegment? last = _bytes.Last;
        foreach (ReadOnlyMemory<byte> piece in bytes)
        {
            _bytes.Write(piece.Span);
        }

        // The segments these bytes took count in the connection's reassembly memory until Release.
        for (BufferSegment? added = last is null ? _bytes.First : last.NextSegment; added is not null; added = added.NextSegment)
        {
            _owner?.CountReassemblyBytes(added.Array.Length);
        }
    }

    // Valid until Release.
    public ReadOnlySequence<byte> Payload
    {
        get
        {
            BufferSegment? first = _bytes.First, last = _bytes.Last;
            if (first is null || last is null)
            {
                return ReadOnlySequence<byte>.Empty;
            }

            if (first == last)
            {
                return new ReadOnlySequence<byte>(first.Array, 0, first.Used);
            }

            // Every segment but the last is full; the last one's Memory covers what it holds.
            last.Seal();
            return new ReadOnlySequence<byte>(first, 0, last, last.Used);
        }
    }

    // Whether the payload is this message's own, whole: while it holds segments it has kept every byte it received.
    public bool IsWholePayload(in ReadOnlySequence<byte> payload) =>
        _bytes.First is { } first && payload.Length == Received
        && (payload.Start.GetObject() == first || payload.Start.GetObject() == first.Array);

    // As if it had arrived unfragmented. Valid until Release.
    public Frame ToFrame() =>
        new(Header.Type, Header.Flags, Header.CallId, Header.MethodId, Payload, Header.TraceContext, Header.RemainingMilliseconds);

    // Once, by the reader loop or by the call that took the message over.
    public void Release()
    {
        long returned = _bytes.Discard();
        if (returned != 0)
        {
            _owner?.CountReassemblyBytes(-returned);
        }
    }

    // Its call was cancelled while it arrived: the rest of its bytes are counted (to check the sequence) and dropped.
    public void Abandon()
    {
        IsSkipped = true;
        Release();
    }
}
