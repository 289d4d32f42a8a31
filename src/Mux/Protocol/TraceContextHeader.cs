using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using System.Text;
using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// A Request's W3C trace context, before the arguments (docs/protocol.md, "Trace context"):
/// <code>
/// u8   n   length of traceparent
/// n        traceparent, ASCII (W3C Trace Context, for example 00-&lt;trace id&gt;-&lt;span id&gt;-01)
/// u16  m   length of tracestate (0 when there is none)
/// m        tracestate, ASCII
/// </code>
/// </summary>
internal static class TraceContextHeader
{
    // W3C: a tracestate longer than 512 characters may be dropped rather than propagated.
    private const int MaxTraceStateLength = 512;

    // version (2) - trace id (32) - span id (16) - flags (2)
    private const int TraceParentLength = 55;

    public static void Write(ref MessagePackWriter writer, Activity activity)
    {
        string traceParent = activity.Id!;
        string? traceState = activity.TraceStateString;
        if (traceState is null || traceState.Length > MaxTraceStateLength)
        {
            traceState = string.Empty;
        }

        int size = 1 + traceParent.Length + 2 + traceState.Length;
        Span<byte> header = writer.GetSpan(size);
        header[0] = (byte)traceParent.Length;
        Encoding.ASCII.GetBytes(traceParent, header[1..]);
        BinaryPrimitives.WriteUInt16LittleEndian(header[(1 + traceParent.Length)..], (ushort)traceState.Length);
        Encoding.ASCII.GetBytes(traceState, header[(3 + traceParent.Length)..]);
        writer.Advance(size);
    }

    /// <summary>False when its lengths run past the body.</summary>
    public static bool TrySplit(ref ReadOnlySequence<byte> body, out ReadOnlySequence<byte> header)
    {
        header = default;
        if (body.Length < 3)
        {
            return false;
        }

        int traceParentLength = body.FirstSpan[0];
        if (body.Length < 3 + traceParentLength)
        {
            return false;
        }

        Span<byte> lengthBytes = stackalloc byte[2];
        body.Slice(1 + traceParentLength, 2).CopyTo(lengthBytes);
        long size = 3 + traceParentLength + BinaryPrimitives.ReadUInt16LittleEndian(lengthBytes);
        if (body.Length < size)
        {
            return false;
        }

        header = body.Slice(0, size);
        body = body.Slice(size);
        return true;
    }

    /// <summary>An invalid traceparent is ignored, as W3C Trace Context asks: the server span starts a new trace.</summary>

    public static bool TryParse(in ReadOnlySequence<byte> header, out ActivityContext context)
    {
        context = default;
        if (header.IsEmpty)
        {
            return false;
        }

        int traceParentLength = header.FirstSpan[0];
        if (traceParentLength < TraceParentLength)
        {
            return false;
        }

        Span<byte> traceParent = stackalloc byte[TraceParentLength];
        header.Slice(1, TraceParentLength).CopyTo(traceParent);

        // A later version may append fields after a '-'; version ff is invalid; version 00 has none.
        bool versionOk = IsLowerHex(traceParent[..2]) && !traceParent[..2].SequenceEqual("ff"u8)
            && (traceParentLength == TraceParentLength
                || (!traceParent[..2].SequenceEqual("00"u8) && header.Slice(1 + TraceParentLength, 1).FirstSpan[0] == (byte)'-'));
        if (!versionOk || traceParent[2] != '-' || traceParent[35] != '-' || traceParent[52] != '-')
        {
            return false;
        }

        ReadOnlySpan<byte> traceId = traceParent.Slice(3, 32);
        ReadOnlySpan<byte> spanId = traceParent.Slice(36, 16);
        ReadOnlySpan<byte> flags = traceParent.Slice(53, 2);
        if (!IsLowerHex(traceId) || IsAllZeros(traceId) || !IsLowerHex(spanId) || IsAllZeros(spanId) || !IsLowerHex(flags))
        {
            return false;
        }

        int traceFlags = (HexValue(flags[0]) << 4) | HexValue(flags[1]);
        ReadOnlySequence<byte> traceStateBytes = header.Slice(3 + traceParentLength);
        string? traceState = traceStateBytes.IsEmpty ? null : Encoding.ASCII.GetString(traceStateBytes);
        context = new ActivityContext(
            ActivityTraceId.CreateFromUtf8String(traceId),
            ActivitySpanId.CreateFromUtf8String(spanId),
            (ActivityTraceFlags)(traceFlags & (int)ActivityTraceFlags.Recorded),
            traceState,
            isRemote: true);
        return true;
    }

    private static bool IsLowerHex(ReadOnlySpan<byte> text)
    {
        foreach (byte c in text)
        {
            if (c is not ((>= (byte)'0' and <= (byte)'9') or (>= (byte)'a' and <= (byte)'f')))
            {
                return false;
            }
        }

        return true;
    }

    private static bool IsAllZeros(ReadOnlySpan<byte> text) => !text.ContainsAnyExcept((byte)'0');

    private static int HexValue(byte c) => c <= '9' ? c - '0' : c - 'a' + 10;
}
