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
        List = compilation.GetTypeByMetadataName("System.Collections.Generic.List`1");
        Dictionary = compilation.GetTypeByMetadataName("System.Collections.Generic.Dictionary`2");
        DateTimeOffset = compilation.GetTypeByMetadataName("System.DateTimeOffset");
        TimeSpan = compilation.GetTypeByMetadataName("System.TimeSpan");
        Guid = compilation.GetTypeByMetadataName("System.Guid");
        MuxServiceAttribute = compilation.GetTypeByMetadataName("Mux.MuxServiceAttribute");
        MuxObjectAttribute = compilation.GetTypeByMetadataName("Mux.MuxObjectAttribute");
        MuxKeyAttribute = compilation.GetTypeByMetadataName("Mux.MuxKeyAttribute");
        SetsRequiredMembersAttribute = compilation.GetTypeByMetadataName("System.Diagnostics.CodeAnalysis.SetsRequiredMembersAttribute");
    }

    public Compilation Compilation { get; }

    public INamedTypeSymbol? Task { get; }

    public INamedTypeSymbol? TaskOfT { get; }

    public INamedTypeSymbol? ValueTask { get; }

    public INamedTypeSymbol? ValueTaskOfT { get; }

    public INamedTypeSymbol? CancellationToken { get; }

    public INamedTypeSymbol? List { get; }

    public INamedTypeSymbol? Dictionary { get; }

    public INamedTypeSymbol? DateTimeOffset { get; }

    public INamedTypeSymbol? TimeSpan { get; }

    public INamedTypeSymbol? Guid { get; }

    public INamedTypeSymbol? MuxServiceAttribute { get; }

    public INamedTypeSymbol? MuxObjectAttribute { get; }

    public INamedTypeSymbol? MuxKeyAttribute { get; }

    public INamedTypeSymbol? SetsRequiredMembersAttribute { get; }

    public static bool Is(ITypeSymbol? type, INamedTypeSymbol? known) =>
        type is not null && known is not null && SymbolEqualityComparer.Default.Equals(type.OriginalDefinition, known);

    public bool IsCancellationToken(ITypeSymbol type) => Is(type, CancellationToken);

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

    /// <summary>Whether Mux formats the type without any registration.</summary>
    public bool IsBuiltin(ITypeSymbol type)
    {
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
                return true;
        }

        if (type is IArrayTypeSymbol { Rank: 1, ElementType.SpecialType: SpecialType.System_Byte })
        {
            return true;
        }

        if (Is(type, DateTimeOffset) || Is(type, TimeSpan) || Is(type, Guid))
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
