using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace Mux.Serialization;

/// <summary>
/// Formats an enum as its underlying integer, for any underlying type, without boxing.
/// </summary>
/// <typeparam name="T">The enum type.</typeparam>
public sealed class EnumFormatter<T> : IMuxFormatter<T>
    where T : struct, Enum
{
    // Type.GetTypeCode reports the underlying type for enums; it needs no reflection metadata,
    // so it is safe under Native AOT, and it runs once per enum type.
    private static readonly TypeCode s_underlyingType = Type.GetTypeCode(typeof(T));

    /// <inheritdoc/>
    public void Serialize(ref MessagePackWriter writer, T value)
    {
        switch (s_underlyingType)
        {
            case TypeCode.Byte:
                writer.Write(Unsafe.As<T, byte>(ref value));
                break;
            case TypeCode.SByte:
                writer.Write(Unsafe.As<T, sbyte>(ref value));
                break;
            case TypeCode.Int16:
                writer.Write(Unsafe.As<T, short>(ref value));
                break;
            case TypeCode.UInt16:
                writer.Write(Unsafe.As<T, ushort>(ref value));
                break;
            case TypeCode.Int32:
                writer.Write(Unsafe.As<T, int>(ref value));
                break;
            case TypeCode.UInt32:
                writer.Write(Unsafe.As<T, uint>(ref value));
                break;
            case TypeCode.Int64:
                writer.Write(Unsafe.As<T, long>(ref value));
                break;
            case TypeCode.UInt64:
                writer.Write(Unsafe.As<T, ulong>(ref value));
                break;
            default:
                ThrowUnsupported();
                break;
        }
    }

    /// <inheritdoc/>
    public T Deserialize(ref MessagePackReader reader)
    {
        switch (s_underlyingType)
        {
            case TypeCode.Byte:
                byte u8 = reader.ReadByte();
                return Unsafe.As<byte, T>(ref u8);
            case TypeCode.SByte:
                sbyte i8 = reader.ReadSByte();
                return Unsafe.As<sbyte, T>(ref i8);
            case TypeCode.Int16:
                short i16 = reader.ReadInt16();
                return Unsafe.As<short, T>(ref i16);
            case TypeCode.UInt16:
                ushort u16 = reader.ReadUInt16();
                return Unsafe.As<ushort, T>(ref u16);
            case TypeCode.Int32:
                int i32 = reader.ReadInt32();
                return Unsafe.As<int, T>(ref i32);
            case TypeCode.UInt32:
                uint u32 = reader.ReadUInt32();
                return Unsafe.As<uint, T>(ref u32);
            case TypeCode.Int64:
                long i64 = reader.ReadInt64();
                return Unsafe.As<long, T>(ref i64);
            case TypeCode.UInt64:
                ulong u64 = reader.ReadUInt64();
                return Unsafe.As<ulong, T>(ref u64);
            default:
                ThrowUnsupported();
                return default;
        }
    }

    // Enums backed by char or bool can be made in IL but not in C#; they are not supported.
    [DoesNotReturn]
    private static void ThrowUnsupported() =>
        MessagePackThrow.Invalid($"Enum type '{typeof(T).FullName}' has underlying type {s_underlyingType}, which Mux does not support.");
}
