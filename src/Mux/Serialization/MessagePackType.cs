namespace Mux.Serialization;

/// <summary>The kind of the next MessagePack value, as told by its leading type byte.</summary>
public enum MessagePackType
{
    /// <summary>The type byte is not defined by the MessagePack specification (0xc1).</summary>
    Unknown,

    /// <summary>A signed or unsigned integer in any of its encodings.</summary>
    Integer,

    /// <summary>The nil value.</summary>
    Nil,

    /// <summary>A <see langword="true"/> or <see langword="false"/> value.</summary>
    Boolean,

    /// <summary>A 32-bit or 64-bit IEEE 754 floating point number.</summary>
    Float,

    /// <summary>A UTF-8 string (fixstr, str8, str16 or str32).</summary>
    String,

    /// <summary>A byte array (bin8, bin16 or bin32).</summary>
    Binary,

    /// <summary>An array header followed by its elements.</summary>
    Array,

    /// <summary>A map header followed by its key/value pairs.</summary>
    Map,

    /// <summary>An extension value (fixext or ext), such as a timestamp.</summary>
    Extension,
}
