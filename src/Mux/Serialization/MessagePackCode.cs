namespace Mux.Serialization;

/// <summary>The type bytes of the MessagePack format, named after the specification.</summary>
internal static class MessagePackCode
{
    public const byte MaxFixInt = 0x7f;
    public const byte MinFixMap = 0x80;
    public const byte MaxFixMap = 0x8f;
    public const byte MinFixArray = 0x90;
    public const byte MaxFixArray = 0x9f;
    public const byte MinFixStr = 0xa0;
    public const byte MaxFixStr = 0xbf;
    public const byte Nil = 0xc0;
    public const byte NeverUsed = 0xc1;
    public const byte False = 0xc2;
    public const byte True = 0xc3;
    public const byte Bin8 = 0xc4;
    public const byte Bin16 = 0xc5;
    public const byte Bin32 = 0xc6;
    public const byte Ext8 = 0xc7;
    public const byte Ext16 = 0xc8;
    public const byte Ext32 = 0xc9;
    public const byte Float32 = 0xca;
    public const byte Float64 = 0xcb;
    public const byte UInt8 = 0xcc;
    public const byte UInt16 = 0xcd;
    public const byte UInt32 = 0xce;
    public const byte UInt64 = 0xcf;
    public const byte Int8 = 0xd0;
    public const byte Int16 = 0xd1;
    public const byte Int32 = 0xd2;
    public const byte Int64 = 0xd3;
    public const byte FixExt1 = 0xd4;
    public const byte FixExt2 = 0xd5;
    public const byte FixExt4 = 0xd6;
    public const byte FixExt8 = 0xd7;
    public const byte FixExt16 = 0xd8;
    public const byte Str8 = 0xd9;
    public const byte Str16 = 0xda;
    public const byte Str32 = 0xdb;
    public const byte Array16 = 0xdc;
    public const byte Array32 = 0xdd;
    public const byte Map16 = 0xde;
    public const byte Map32 = 0xdf;
    public const byte MinNegativeFixInt = 0xe0;

    /// <summary>The extension type code the specification reserves for timestamps.</summary>
    public const sbyte TimestampTypeCode = -1;

    /// <summary>Classifies a type byte.</summary>
    public static MessagePackType GetType(byte code) => code switch
    {
        <= MaxFixInt => MessagePackType.Integer,
        <= MaxFixMap => MessagePackType.Map,
        <= MaxFixArray => MessagePackType.Array,
        <= MaxFixStr => MessagePackType.String,
        Nil => MessagePackType.Nil,
        NeverUsed => MessagePackType.Unknown,
        False or True => MessagePackType.Boolean,
        <= Bin32 => MessagePackType.Binary,
        <= Ext32 => MessagePackType.Extension,
        <= Float64 => MessagePackType.Float,
        <= Int64 => MessagePackType.Integer,
        <= FixExt16 => MessagePackType.Extension,
        <= Str32 => MessagePackType.String,
        <= Array32 => MessagePackType.Array,
        <= Map32 => MessagePackType.Map,
        _ => MessagePackType.Integer,
    };
}
