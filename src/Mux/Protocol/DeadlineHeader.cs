using System.Buffers.Binary;
using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// A Request's u32 remaining milliseconds after the method id (docs/protocol.md, "Deadlines"). A duration, as
/// grpc-timeout is, so the two machines' clocks never have to agree; the server counts it from the read that brought it.
/// </summary>
internal static class DeadlineHeader
{
    public const int Size = 4;

    /// <summary>The longest remaining time the header can carry (about 49.7 days); a longer one is sent as this.</summary>
    public const long MaxMilliseconds = uint.MaxValue;

    public static void Write(ref MessagePackWriter writer, uint remainingMilliseconds)
    {
        Span<byte> header = writer.GetSpan(Size);
        BinaryPrimitives.WriteUInt32LittleEndian(header, remainingMilliseconds);
        writer.Advance(Size);
    }

    /// <summary>A Request that waited to be sent tells the time left when it goes.</summary>
    public static void Rewrite(Span<byte> frame, uint remainingMilliseconds)
    {
        const int Offset = ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize;
        BinaryPrimitives.WriteUInt32LittleEndian(frame[Offset..], remainingMilliseconds);
    }

    /// <summary>What is left of <paramref name="deadline"/> at <paramref name="now"/>, rounded up to a whole millisecond
    /// so that a call with time left never reads as expired, and clamped to what the header can carry.</summary>
    public static uint RemainingMilliseconds(long deadline, long now, long frequency)
    {
        if (deadline <= now)
        {
            return 0;
        }

        double milliseconds = Math.Ceiling((deadline - now) * (1000.0 / frequency));
        return milliseconds >= MaxMilliseconds ? uint.MaxValue : (uint)milliseconds;
    }

    public
 static long ToTimestamp(TimeProvider clock, long arrival, uint remainingMilliseconds) =>
        arrival + (long)(remainingMilliseconds * (clock.TimestampFrequency / 1000.0));
}
