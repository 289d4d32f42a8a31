namespace Mux;

/// <summary>
/// Places a field or property of a <see cref="MuxObjectAttribute"/> type at a fixed index of the
/// MessagePack array it is written as. On a record's primary constructor parameter, target the
/// property: <c>record User([property: MuxKey(0)] int Id, [property: MuxKey(1)] string Name);</c>
/// </summary>
/// <remarks>
/// When any member of a type has this attribute, only the members that have it are serialized.
/// Keep indexes stable once a contract is in use: add new members with new, higher indexes.
/// </remarks>
[AttributeUsage(AttributeTargets.Property | AttributeTargets.Field, Inherited = true, AllowMultiple = false)]
public sealed class MuxKeyAttribute : Attribute
{
    /// <summary>Places the member at <paramref name="index"/>.</summary>
    /// <param name="index">The member's zero-based index in the array; must not be negative.</param>
    public MuxKeyAttribute(int index)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(index);
        Index = index;
    }

    /// <summary>The member's zero-based index in the MessagePack array.</summary>
    public int Index { get; }
}
