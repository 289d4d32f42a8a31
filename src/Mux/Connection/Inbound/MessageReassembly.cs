using System.Buffers;
using MessagePack;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Connection;

/// <summary>
/// One message arriving in fragments: its payload so far in pooled segments, added as bytes arrive (so memory follows what
/// the peer sent, never what it announced), returned once handed on or by the call that took it over. A message over
/// MaxMessageSize keeps no bytes: it is only counted until its last fragment. Filled by the reader loop only.
/// </summary>
/// <remarks>
/// <para>Segments, never one growing array: growing one would put a copy of up to 64 MiB on the reader loop, during which
/// no small call's frame is read.</para>
/// <para>A bin32 of 64 KiB or more lands in an array of its own, which the bin formatters return itself, so its bytes are
/// copied once on this side. The scan reads MessagePack's value headers as a flat sequence (a container's header is a
/// value with no bytes of its own), so where the bin sits does not matter. What lands is only storage: the payload reads
/// back byte for byte whatever the scan decided.</para>
/// </remarks>

internal sealed class MessageReassembly
{
    // Values scanned for a large bin before the scan gives up (a payload of many small values has none worth landing).
    private const int ScanValues = 64;

    // The payload so far, first to last, linked as a ReadOnlySequence: fragments go straight into segments.
    private readonly MessageBufferWriter _bytes;

    // The read side whose reassembly memory this message counts in; null in unit tests.
    private readonly Inbound? _owner;

    // The scan for a large bin to land, over the payload as it arrives. Reader loop only.
    // Values that may still be read before the scan gives up; reset after each landed bin. 0: the scan is over.
    private int _scanBudget = ScanValues;

    // Payload bytes the scan has passed, up to where it is.
    private long _scanned;

    // Bytes of the current value still to pass: its header after its first byte (_headerLeft, of which the first
    // _lengthLeft make its big-endian length), then its bytes (_skip).
    private int _headerLeft;
    private int _lengthLeft;
    private long _length;
    private long _skip;

    // The MessagePack code of the current value, and whether its header's length counts its bytes (str, bin, ext)
    // rather than elements (array, map) or nothing.
    private byte _code;
    private bool _lengthIsBytes;

    // Bytes of the landed bin still to arrive, reserved against the connection's limit until they do.
    private long _landing;

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

        PayloadCopies.Reassembled(bytes.Length);
        BufferSegment? last = _bytes.Last;
        foreach (ReadOnlyMemory<byte> piece in bytes)
        {
            ReadOnlySpan<byte> span = piece.Span;
            while (!span.IsEmpty)
            {
                // Up to the end of a large bin's header, if one ends in this piece; then its bytes start an array of their own.
                int land = 0;
                int count = _scanBudget == 0 ? span.Length : Scan(span, out land);
                _bytes.Write(span[..count]);
                span = span[count..];
                if (land != 0)
                {
                    _bytes.Land(land);
                }
            }
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

    // Scans span, the payload's next bytes: returns how many to write before the next step, with land set to a large
    // bin's length when they end its header and its bytes should land in an array of their own.
    private int Scan(ReadOnlySpan<byte> span, out int land)
    {
        land = 0;
        int i = 0;
        while (i < span.Length)
        {
            if (_skip != 0)
            {
                int passed = (int)Math.Min(_skip, span.Length - i);
                _skip -= passed;
                i += passed;
                if (_landing != 0)
                {
                    _landing -= passed;
                    _owner?.LandedBytesArrived(passed);
                }

                continue;
            }

            if (_headerLeft == 0)
            {
                if (_scanBudget == 1 || !StartValue(span[i]))
                {
                    _scanBudget = 0; // Nothing worth landing near the start, or not MessagePack as expected: write the rest.
                    _scanned += span.Length;
                    return span.Length;
                }

                _scanBudget--;
            }
            else
            {
                if (_lengthLeft != 0)
                {
                    _length = (_length << 8) | span[i];
                    _lengthLeft--;
                }

                _headerLeft--;
            }

            i++;
            if (_headerLeft == 0)
            {
                long bytes = _lengthIsBytes ? _length : _skip;
                _skip = bytes;
                if (_code == MessagePackCode.Bin32 && bytes >= BinaryInPieces.SpliceFrom && bytes <= Header.PayloadSize - (_scanned + i)
                    && (_owner?.TryReserveLanding(bytes) ?? true))
                {
                    _landing = bytes;
                    _scanBudget = ScanValues;
                    land = (int)bytes;
                    _scanned += i;
                    return i;
                }
            }
        }

        _scanned += i;
        return i;
    }

    // Reads a value's first byte: sets how many header bytes follow, and in _skip the bytes of a value whose size the code
    // alone gives. False for the one code MessagePack never uses.
    private bool StartValue(byte code)
    {
        _code = code;
        _length = 0;
        _lengthIsBytes = false;
        _skip = 0;
        (int lengthBytes, int moreHeader, int fixedBytes) = code switch
        {
            <= 0x7f or >= 0xe0 => (0, 0, 0), // fixint
            <= 0x9f => (0, 0, 0), // fixmap, fixarray: the elements are values of their own
            <= 0xbf => (0, 0, code & 0x1f), // fixstr
            0xc0 or 0xc2 or 0xc3 => (0, 0, 0), // nil, false, true
            0xc4 or 0xd9 => (1, 0, -1), // bin8, str8
            0xc5 or 0xda => (2, 0, -1), // bin16, str16
            0xc6 or 0xdb => (4, 0, -1), // bin32, str32
            0xc7 => (1, 1, -1), // ext8: length, type
            0xc8 => (2, 1, -1),
            0xc9 => (4, 1, -1),
            0xca => (0, 0, 4), // float32
            0xcb => (0, 0, 8),
            0xcc or 0xd0 => (0, 0, 1), // uint8, int8
            0xcd or 0xd1 => (0, 0, 2),
            0xce or 0xd2 => (0, 0, 4),
            0xcf or 0xd3 => (0, 0, 8),
            0xd4 => (0, 0, 2), // fixext 1: type, data
            0xd5 => (0, 0, 3),
            0xd6 => (0, 0, 5),
            0xd7 => (0, 0, 9),
            0xd8 => (0, 0, 17),
            0xdc or 0xde => (0, 2, 0), // array16, map16: a count, not bytes
            0xdd or 0xdf => (0, 4, 0),
            _ => (-1, 0, 0), // 0xc1, never used
        };

        if (lengthBytes < 0)
        {
            return false;
        }

        _lengthLeft = lengthBytes;
        _headerLeft = lengthBytes + moreHeader;
        _lengthIsBytes = fixedBytes < 0;
        _skip = Math.Max(fixedBytes, 0);
        return true;
    }

    // Once, by the reader loop or by the call that took the message over.
    public void Release()
    {
        if (_landing != 0)
        {
            _owner?.LandedBytesArrived(_landing); // Never will: the reservation goes.
            _landing = 0;
        }

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
