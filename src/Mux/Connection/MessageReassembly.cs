using System.Buffers;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// One message arriving in fragments (docs/protocol.md, *Fragments*): what its first fragment said,
/// and its payload so far in 64 KiB segments from <see cref="BufferSegmentPool"/>, added as bytes
/// arrive (so memory follows what the peer actually sent, never what it announced) and returned
/// when the message has been handed on, or by the call that took it over
/// (<see cref="MuxConnection.TakeDeliveredMessage"/>), which deserializes straight from them as one
/// multi-segment sequence. A message over MaxMessageSize keeps no bytes at all: it is only counted
/// until its last fragment. Filled by the reader loop only.
/// </summary>
internal sealed class MessageReassembly
{
    // Why segments, and why that size: bytes are never copied into a larger array (growing one
    // array fourfold put a copy of up to 64 MiB on the reader loop, into fresh memory, during which
    // no small call's frame was read: p99 0.1-0.3 s during 100 MiB uploads), so the largest single
    // copy is a fragment. Chunks of 256 KiB doubling to 4 MiB came from ArrayPool.Shared, which
    // keeps a few per size and per thread: rented on the reader loop and returned by the call on a
    // worker, they were now and then allocated afresh on the large object heap (full collections).
    // 64 KiB segments stay below it, from a pool that keeps enough of them (BufferSegmentPool).

    // The segments holding the payload so far, first to last, linked as a ReadOnlySequence: the
    // writer a large message is encoded with, here with no staging buffer, so fragments go straight
    // into segments. Immutable.
    private readonly MessageBufferWriter _bytes;

    // The connection whose reassembly memory this message counts in (see
    // MuxConnection.ReassemblyBytesRented); null in unit tests. Immutable.
    private readonly MuxConnection? _owner;

    public MessageReassembly(in Frame first, bool skip, MuxConnection? owner = null, BufferSegmentPool? pool = null)
    {
        _owner = owner;
        _bytes = new MessageBufferWriter(pool ?? BufferSegmentPool.Shared);
        IsSkipped = skip;

        // The trace context is a slice of the receive buffer, so it is copied: at most ~600 bytes,
        // once per big message.
        ReadOnlySequence<byte> traceContext = first.TraceContext.IsEmpty || skip ? default : new(first.TraceContext.ToArray());
        Header = new Frame(first.Type, first.Flags & ~FrameFlags.MoreFragments, first.CallId, first.MethodId, default, traceContext, first.RemainingMilliseconds, first.MessageSize, first.PayloadSize);
        Append(first.Payload);
    }

    /// <summary>What the first fragment said, less MoreFragments and without its payload: the
    /// message's type, flags, call, method, deadline and trace context, the size it announced (the
    /// whole message after the common header) and the size of the reassembled payload.</summary>
    public Frame Header { get; }

    /// <summary>Over MaxMessageSize, no call waits for it, or its call was cancelled while it
    /// arrived (<see cref="Abandon"/>): its bytes are counted and dropped.</summary>
    public bool IsSkipped { get; private set; }

    /// <summary>Counted against MaxMessagesInProgress while it arrives.</summary>
    public bool IsBounded { get; init; }

    /// <summary>Payload bytes received so far (kept or, when skipped, dropped).</summary>
    public long Received { get; private set; }

    /// <summary>Adds the next fragment's bytes. Caller has checked that they fit the announced size.</summary>
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

    /// <summary>The whole payload: one array's bytes, or the segments in order. Valid until <see cref="Release"/>.</summary>
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

    /// <summary>Whether <paramref name="payload"/> is this message's whole <see cref="Payload"/>
    /// (rather than, say, a copy or a part of it). While it holds segments, it has kept every byte
    /// it received: a skipped or abandoned message holds none.</summary>
    public bool IsWholePayload(in ReadOnlySequence<byte> payload) =>
        _bytes.First is { } first && payload.Length == Received && (payload.Start.GetObject() == first || payload.Start.GetObject() == first.Array);

    /// <summary>The whole message as one frame, as if it had arrived unfragmented. Valid until <see cref="Release"/>.</summary>
    public Frame ToFrame() => new(Header.Type, Header.Flags, Header.CallId, Header.MethodId, Payload, Header.TraceContext, Header.RemainingMilliseconds);

    /// <summary>Returns the segments to the pool. Called once, by the reader loop or by the call
    /// that took the message over (on its own thread).</summary>
    public void Release()
    {
        long returned = _bytes.Discard();
        if (returned != 0)
        {
            _owner?.CountReassemblyBytes(-returned);
        }
    }

    /// <summary>Its call was cancelled while it arrived: gives its segments back now, and drops the
    /// rest of its bytes as they arrive (counting them, to check the sequence). Reader loop only.</summary>
    public void Abandon()
    {
        IsSkipped = true;
        Release();
    }
}
