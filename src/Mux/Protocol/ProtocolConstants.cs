using System.Buffers.Binary;

namespace Mux.Protocol;

/// <summary>Sizes and magic numbers of the wire protocol (docs/protocol.md).</summary>
internal static class ProtocolConstants
{
    /// <summary>Version 2 has the Request's deadline header and messages in fragments. A peer of another version is
    /// refused in the handshake.</summary>
    public const ushort Version = 2;

    /// <summary>"MUX1" as it appears on the wire, read as a little-endian u32.</summary>
    public static readonly uint Magic = BinaryPrimitives.ReadUInt32LittleEndian("MUX1"u8);

    public const int LengthPrefixSize = 4;

    /// <summary>type (1) + flags (1) + call id (4): the part of every frame after the length prefix.</summary>
    public const int CommonHeaderSize = 6;

    /// <summary>The smallest possible frame on the wire.</summary>
    public const int FrameHeaderSize = LengthPrefixSize + CommonHeaderSize;

    public const int RequestHeaderSize = 4;

    /// <summary>Magic (4) + version (2) after the common header of Hello and HelloAck.</summary>
    public const int HelloHeaderSize = 6;

    /// <summary>The u32 total message size a first fragment carries after the common header.</summary>
    public const int FragmentTotalSize = 4;

    /// <summary>A first fragment holds the whole type-specific header (at most ~600 bytes).</summary>
    public const int MinimumFragmentSize = 1024;

    public const int PingPayloadSize = 8;

    public const int StreamCreditPayloadSize = 4;

    /// <summary>The last-served call id.</summary>
    public const int GoAwayPayloadSize = 4;

    /// <summary>Always accepted, so a handshake is never refused for its size.</summary>

    public const int MinimumMaxFrameSize = 4 * 1024;
}
