using System.Collections.Generic;
using Microsoft.CodeAnalysis;

namespace Mux.Generators;

/// <summary>The framework and Mux types the generator looks for, resolved once per compilation.</summary>
internal sealed class KnownTypes
{
    public KnownTypes(Compilation compilation)
    {
        Compilation = compilation;
        Task = compilation.GetTypeByMetadataName("System.Threading.Tasks.Task");
        TaskOfT = compilation.GetTypeByMetadataName("System.Threading.Tasks.Task`1");
        ValueTask = compilation.GetTypeByMetadataName("System.Threading.Tasks.ValueTask");
        ValueTaskOfT = compilation.GetTypeByMetadataName("System.Threading.Tasks.ValueTask`1");
        CancellationToken = compilation.GetTypeByMetadataName("System.Threading.CancellationToken");
        MuxCallContext = compilation.GetTypeByMetadataName("Mux.MuxCallContext");
        AsyncEnumerable = compilation.GetTypeByMetadataName("System.Collections.Generic.IAsyncEnumerable`1");
        AsyncDisposable = compilation.GetTypeByMetadataName("System.IAsyncDisposable");
        List = compilation.GetTypeByMetadataName("System.Collections.Generic.List`1");
        Dictionary = compilation.GetTypeByMetadataName("System.Collections.Generic.Dictionary`2");
        MuxServiceAttribute = compilation.GetTypeByMetadataName("Mux.MuxServiceAttribute");
        MessagePackObjectAttribute = compilation.GetTypeByMetadataName("MessagePack.MessagePackObjectAttribute");
        KeyAttribute = compilation.GetTypeByMetadataName("MessagePack.KeyAttribute");
        IgnoreMemberAttribute = compilation.GetTypeByMetadataName("MessagePack.IgnoreMemberAttribute");
        SerializationConstructorAttribute = compilation.GetTypeByMetadataName("MessagePack.SerializationConstructorAttribute");
        UnionAttribute = compilation.GetTypeByMetadataName("MessagePack.UnionAttribute");
        MessagePackFormatterAttribute = compilation.GetTypeByMetadataName("MessagePack.MessagePackFormatterAttribute");
        ReadOnlyMemory = compilation.GetTypeByMetadataName("System.ReadOnlyMemory`1");
        Memory = compilation.GetTypeByMetadataName("System.Memory`1");
        ArraySegment = compilation.GetTypeByMetadataName("System.ArraySegment`1");
        foreach (string name in s_builtinTypeNames)
        {
            if (compilation.GetTypeByMetadataName(name) is { } builtin)
            {
                _builtins.Add(builtin);
            }
        }
        SetsRequiredMembersAttribute = compilation.GetTypeByMetadataName("System.Diagnostics.CodeAnalysis.SetsRequiredMembersAttribute");
    }

    // Types outside SpecialType that MessagePack's BuiltinResolver formats.
    private static readonly string[] s_builtinTypeNames =
    [
        "System.DateTimeOffset",
        "System.TimeSpan",
        "System.Guid",
        "System.Uri",
        "System.Version",
        "System.DateOnly",
        "System.TimeOnly",
        "System.Half",
        "System.Numerics.BigInteger",
        "System.Numerics.Complex",
        "System.Text.StringBuilder",
        "System.Collections.BitArray",
        "System.Buffers.ReadOnlySequence`1",
    ];

    private readonly HashSet<ITypeSymbol> _builtins = new(SymbolEqualityComparer.Default);

    public Compilation Compilation { get; }

    public INamedTypeSymbol? Task { get; }

    public INamedTypeSymbol? TaskOfT { get; }

    public INamedTypeSymbol? ValueTask { get; }

    public INamedTypeSymbol? ValueTaskOfT { get; }

    public INamedTypeSymbol? CancellationToken { get; }

    public INamedTypeSymbol? MuxCallContext { get; }
    public INamedTypeSymbol? AsyncEnumerable { get; }

    public INamedTypeSymbol? AsyncDisposable { get; }

    public INamedTypeSymbol? List { get; }

    public INamedTypeSymbol? Dictionary { get; }

    public INamedTypeSymbol? MuxServiceAttribute { get; }

    public INamedTypeSymbol? MessagePackObjectAttribute { get; }

    public INamedTypeSymbol? KeyAttribute { get; }

    public INamedTypeSymbol? IgnoreMemberAttribute { get; }

    public INamedTypeSymbol? SerializationConstructorAttribute { get; }

    public INamedTypeSymbol? UnionAttribute { get; }

    public INamedTypeSymbol? MessagePackFormatterAttribute { get; }

    public INamedTypeSymbol? ReadOnlyMemory { get; }

    public INamedTypeSymbol? Memory { get; }

    public INamedTypeSymbol? ArraySegment { get; }

    public INamedTypeSymbol? SetsRequiredMembersAttribute { get; }

    public static bool Is(ITypeSymbol? type, INamedTypeSymbol? known) =>
        type is not null && known is not null && SymbolEqualityComparer.Default.Equals(type.OriginalDefinition, known);

    public bool IsCancellationToken(ITypeSymbol type) => Is(type, CancellationToken);

    public bool IsCallContext(ITypeSymbol type) => Is(type, MuxCallContext);
    /// <summary>The T of an <c>IAsyncEnumerable&lt;T&gt;</c> (a stream); null for any other type.</summary>
    public ITypeSymbol? StreamItemType(ITypeSymbol type) =>
        Is(type, AsyncEnumerable) && type is INamedTypeSymbol { TypeArguments.Length: 1 } stream ? stream.TypeArguments[0] : null;

    public bool HasAttribute(ISymbol symbol, INamedTypeSymbol? attribute) => GetAttribute(symbol, attribute) is not null;

    public static AttributeData? GetAttribute(ISymbol symbol, INamedTypeSymbol? attribute)
    {
        if (attribute is null)
        {
            return null;
        }

        foreach (AttributeData data in symbol.GetAttributes())
        {
            if (SymbolEqualityComparer.Default.Equals(data.AttributeClass, attribute))
            {
                return data;
            }
        }

        return null;
    }

    /// <summary>Whether MessagePack's <c>BuiltinResolver</c> formats the type: no formatter to
    /// generate or register, and no run-time code generation.</summary>
    public bool IsBuiltin(ITypeSymbol type)
    {
        if (_builtins.Contains(type.OriginalDefinition))
        {
            return true;
        }

        // Bytes as MessagePack bin: ReadOnlyMemory<byte>, Memory<byte>, ArraySegment<byte>.
        if (type is INamedTypeSymbol { TypeArguments.Length: 1 } wrapper
            && wrapper.TypeArguments[0].SpecialType == SpecialType.System_Byte
            && (Is(wrapper, ReadOnlyMemory) || Is(wrapper, Memory) || Is(wrapper, ArraySegment)))
        {
            return true;
        }

        switch (type.SpecialType)
        {
            case SpecialType.System_Boolean:
            case SpecialType.System_Byte:
            case SpecialType.System_SByte:
            case SpecialType.System_Int16:
            case SpecialType.System_UInt16:
            case SpecialType.System_Int32:
            case SpecialType.System_UInt32:
            case SpecialType.System_Int64:
            case SpecialType.System_UInt64:
            case SpecialType.System_Single:
            case SpecialType.System_Double:
            case SpecialType.System_Char:
            case SpecialType.System_String:
            case SpecialType.System_Decimal:
            case SpecialType.System_DateTime:
            case SpecialType.System_Object:
                return true;
        }

        // dynamic is object to MessagePack (its resolver is asked for the formatter of object).
        if (type.TypeKind == TypeKind.Dynamic)
        {
            return true;
        }

        if (type is IArrayTypeSymbol { Rank: 1, ElementType.SpecialType: SpecialType.System_Byte })
        {
            return true;
        }

        return TryGetNullableUnderlying(type, out ITypeSymbol? underlying) && IsBuiltin(underlying!);
    }

    public static bool TryGetNullableUnderlying(ITypeSymbol type, out ITypeSymbol? underlying)
    {
        if (type is INamedTypeSymbol { OriginalDefinition.SpecialType: SpecialType.System_Nullable_T } named)
        {
            underlying = named.TypeArguments[0];
            return true;
        }

        underlying = null;
        return false;
    }
}
