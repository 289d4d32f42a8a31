using System.Buffers.Binary;

namespace Mux.Protocol;

/// <summary>Sizes and magic numbers of the wire protocol (docs/protocol.md).</summary>
internal static class ProtocolConstants
{
    /// <summary>The protocol version this build speaks: version 2 has the Request's deadline header and messages in
    /// fragments. A peer of another version is refused in the handshake with a message naming both.</summary>
    public const ushort Version = 2;

    /// <summary>"MUX1" as it appears on the wire, read as a little-endian u32.</summary>
    public static readonly uint Magic = BinaryPrimitives.ReadUInt32LittleEndian("MUX1"u8);

    public const int LengthPrefixSize = 4;

    /// <summary>type (1) + flags (1) + call id (4): the part of every frame after the length prefix.</summary>
    public const int CommonHeaderSize = 6;

    /// <summary>Length prefix plus the common header: the smallest possible frame on the wire.</summary>
    public const int FrameHeaderSize = LengthPrefixSize + CommonHeaderSize;

    /// <summary>The method id that follows the common header of a Request.</summary>
    public const int RequestHeaderSize = 4;

    /// <summary>Magic (4) + version (2) after the common header of Hello and HelloAck.</summary>
    public const int HelloHeaderSize = 6;

    /// <summary>The u32 total message size a first fragment carries after the common header.</summary>
    public const int FragmentTotalSize = 4;

    /// <summary>The smallest fragment size an endpoint may choose: the first fragment must hold the whole type-specific
    /// header (a Request's method id and trace context, at most ~600 bytes).</summary>
    public const int MinimumFragmentSize = 1024;

    /// <summary>The opaque payload of Ping and Pong.</summary>
    public const int PingPayloadSize = 8;

    /// <summary>The u32 item count that StreamCredit carries.</summary>
    public const int StreamCreditPayloadSize = 4;

    /// <summary>The last-served call id that GoAway carries.</summary>
    public const int GoAwayPayloadSize = 4;

    /// <summary>Frames up to this size are always accepted, whatever the settings say, so a handshake is never refused for
    /// its size.</summary>
    public const int MinimumMaxFrameSize = 4 * 1024;
}
