namespace Mux;

/// <summary>
/// Mux generates a MessagePack formatter for this type at compile time and registers it with
/// <see cref="Serialization.MuxFormatterResolver"/>, so the type can be a parameter, a result, or a
/// member of another <see cref="MuxObjectAttribute"/> type.
/// </summary>
/// <remarks>
/// <para>
/// The type is written as a MessagePack array. A member marked <see cref="MuxKeyAttribute"/> goes
/// at the index it names (gaps are written as nil). When no member is marked, every public instance
/// field and every public instance property with a public getter is used, in declaration order
/// (base class members first), at indexes 0, 1, 2, …
/// </para>
/// <para>
/// To read the type back Mux needs either a public parameterless constructor and settable
/// (<see langword="set"/> or <see langword="init"/>) members, or a public constructor whose
/// parameters match members by name (ignoring case), as a record's primary constructor does.
/// Elements beyond the known members are skipped, and members missing from a shorter array keep
/// their default values, so a contract can add members at the end without breaking older peers.
/// A nil is read as <see langword="null"/> for a reference type.
/// </para>
/// </remarks>
[AttributeUsage(AttributeTargets.Class | AttributeTargets.Struct, Inherited = false, AllowMultiple = false)]
public sealed class MuxObjectAttribute : Attribute
{
}
