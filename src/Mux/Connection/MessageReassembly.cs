using System.Buffers;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// One message arriving in fragments (docs/protocol.md, *Fragments*): what its first fragment said,
/// and its payload so far in chunks rented from the shared pool, added as bytes arrive (so memory
/// follows what the peer actually sent, never what it announced, and is at most about twice that)
/// and returned when the message has been handed on, or by the call that took it over
/// (<see cref="MuxConnection.TakeDeliveredMessage"/>). A message over MaxMessageSize keeps no
/// bytes at all: it is only counted until its last fragment. Filled by the reader loop only.
/// </summary>
internal sealed class MessageReassembly
{
    // Chunk sizes: the first at most FirstChunkSize, each later one as large as all before it, up
    // to MaxChunkSize. Chunks are never copied into a larger array: growing one array fourfold put
    // a copy of up to 64 MiB (a 100 MiB message) on the reader loop, into freshly allocated memory
    // (page faults), during which no small call's frame was read (small-call p99 0.1-0.3 s during 100 MiB uploads); the
    // largest single copy is now a fragment. 4 MiB chunks also stay in the shared pool (a 128 MiB
    // array is rarely there twice, so it was allocated again for the next large message).
    private const int FirstChunkSize = 256 * 1024;
    private const int MaxChunkSize = 4 * 1024 * 1024;

    // The chunks holding the payload so far, first to last, linked as a ReadOnlySequence.
    private Chunk? _first;
    private Chunk? _last;

    // Payload bytes kept in the chunks (Received counts skipped ones too).
    private long _kept;

    // The connection whose reassembly memory this message counts in (see
    // MuxConnection.ReassemblyBytesRented); null in unit tests. Immutable.
    private readonly MuxConnection? _owner;

    public MessageReassembly(in Frame first, bool skip, MuxConnection? owner = null)
    {
        _owner = owner;
        Type = first.Type;
        Flags = first.Flags & ~FrameFlags.MoreFragments;
        CallId = first.CallId;
        MethodId = first.MethodId;
        RemainingMilliseconds = first.RemainingMilliseconds;
        MessageSize = first.MessageSize;
        PayloadSize = first.PayloadSize;
        IsSkipped = skip;
        if (!first.TraceContext.IsEmpty && !skip)
        {
            _traceContext = first.TraceContext.ToArray(); // At most ~600 bytes, once per big message.
        }

        Append(first.Payload);
    }

    private readonly byte[]? _traceContext;

    public FrameType Type { get; }

    public FrameFlags Flags { get; }

    public uint CallId { get; }

    public uint MethodId { get; }

    /// <summary>A Request's deadline header, from its first fragment.</summary>
    public uint RemainingMilliseconds { get; }

    /// <summary>The size the first fragment announced (the whole message after the common header).</summary>
    public uint MessageSize { get; }

    /// <summary>The size of the reassembled payload.</summary>
    public long PayloadSize { get; }

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

        foreach (ReadOnlyMemory<byte> segment in bytes)
        {
            ReadOnlySpan<byte> source = segment.Span;
            while (!source.IsEmpty)
            {
                Chunk chunk = _last is { Free: > 0 } last ? last : AddChunk();
                int count = Math.Min(source.Length, chunk.Free);
                source[..count].CopyTo(chunk.Array.AsSpan(chunk.Used));
                chunk.Used += count;
                _kept += count;
                source = source[count..];
            }
        }
    }

    private Chunk AddChunk()
    {
        long size = Math.Min(PayloadSize - _kept, _first is null ? FirstChunkSize : Math.Clamp(_kept, FirstChunkSize, MaxChunkSize));
        var chunk = new Chunk(ArrayPool<byte>.Shared.Rent((int)size), _kept);
        _owner?.CountReassemblyBytes(chunk.Array.Length);
        if (_last is null)
        {
            _first = chunk;
        }
        else
        {
            _last.SetNext(chunk);
        }

        _last = chunk;
        return chunk;
    }

    /// <summary>The whole payload: one array's bytes, or the chunks in order. Valid until <see cref="Release"/>.</summary>
    public ReadOnlySequence<byte> Payload
    {
        get
        {
            if (_first is null || _last is null)
            {
                return ReadOnlySequence<byte>.Empty;
            }

            if (_first == _last)
            {
                return new ReadOnlySequence<byte>(_first.Array, 0, _first.Used);
            }

            // Every chunk but the last is full; the last one's Memory covers what it holds.
            _last.Seal();
            return new ReadOnlySequence<byte>(_first, 0, _last, _last.Used);
        }
    }

    /// <summary>Whether <paramref name="payload"/> is this message's whole <see cref="Payload"/>
    /// (rather than, say, a copy or a part of it).</summary>
    public bool IsWholePayload(in ReadOnlySequence<byte> payload) =>
        _first is not null && payload.Length == _kept && (payload.Start.GetObject() == _first || payload.Start.GetObject() == _first.Array);

    /// <summary>The whole message as one frame, as if it had arrived unfragmented. Valid until <see cref="Release"/>.</summary>
    public Frame ToFrame() => new(
        Type,
        Flags,
        CallId,
        MethodId,
        Payload,
        _traceContext is null ? default : new ReadOnlySequence<byte>(_traceContext),
        RemainingMilliseconds);

    /// <summary>Returns the chunks to the pool. Called once, by the reader loop or by the call
    /// that took the message over.</summary>
    public void Release()
    {
        Chunk? chunk = _first;
        _first = null;
        _last = null;
        _kept = 0;
        long returned = 0;
        while (chunk is not null)
        {
            returned += chunk.Array.Length;
            ArrayPool<byte>.Shared.Return(chunk.Array);
            chunk = chunk.NextChunk;
        }

        if (returned != 0)
        {
            _owner?.CountReassemblyBytes(-returned);
        }
    }

    /// <summary>Its call was cancelled while it arrived: gives its chunks back now, and drops the
    /// rest of its bytes as they arrive (counting them, to check the sequence). Reader loop only.</summary>
    public void Abandon()
    {
        IsSkipped = true;
        Release();
    }

    /// <summary>One rented array of the payload, and its place in the sequence.</summary>
    private sealed class Chunk : ReadOnlySequenceSegment<byte>
    {
        public Chunk(byte[] array, long runningIndex)
        {
            Array = array;
            RunningIndex = runningIndex;
        }

        public byte[] Array { get; }

        /// <summary>Bytes of <see cref="Array"/> holding payload, from its start.</summary>
        public int Used { get; set; }

        public int Free => Array.Length - Used;

        public Chunk? NextChunk => (Chunk?)Next;

        /// <summary>Links the next chunk; this one is full (it only gets a successor once full).</summary>
        public void SetNext(Chunk next)
        {
            Seal();
            Next = next;
        }

        /// <summary>Makes the sequence see the bytes written so far.</summary>
        public void Seal() => Memory = Array.AsMemory(0, Used);
    }
}
