using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using System.Text;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;

namespace Mux.Generators;

/// <summary>How the generator spells types and names: in generated C#, in method ids and in hint names.</summary>
internal static class TypeNames
{
    /// <summary><c>global::</c>-qualified, keywords for special types, no nullable annotations.</summary>
    private static readonly SymbolDisplayFormat s_plain = SymbolDisplayFormat.FullyQualifiedFormat;

    /// <summary>Like <see cref="s_plain"/>, with <c>?</c> on nullable reference types.</summary>
    private static readonly SymbolDisplayFormat s_annotated = SymbolDisplayFormat.FullyQualifiedFormat
        .AddMiscellaneousOptions(SymbolDisplayMiscellaneousOptions.IncludeNullableReferenceTypeModifier);

    /// <summary>The type as generated code names it, without nullable reference annotations.</summary>
    public static string Plain(ITypeSymbol type) => type.WithNullableAnnotation(NullableAnnotation.NotAnnotated).ToDisplayString(s_plain);

    /// <summary>The type as generated code names it, keeping its nullable reference annotations.</summary>
    public static string Annotated(ITypeSymbol type) => type.ToDisplayString(s_annotated);

    /// <summary>The type as a diagnostic message names it.</summary>
    public static string ForMessage(ISymbol symbol) => symbol.ToDisplayString(SymbolDisplayFormat.CSharpErrorMessageFormat);

    /// <summary>Escapes an identifier that is a C# keyword with <c>@</c>.</summary>
    public static string Identifier(string name) =>
        SyntaxFacts.GetKeywordKind(name) != SyntaxKind.None ? "@" + name : name;

    /// <summary>
    /// The full name of a type as method ids use it: namespace, containing types and name joined
    /// with '.', generic arguments in angle brackets separated by ',' (no spaces), arrays with
    /// "[]". No <c>global::</c>, no keywords (System.Int32, not int), no '@' before a name that is a
    /// keyword (Audit.event, not Audit.@event), no nullable annotations (a nullable value type is
    /// System.Nullable&lt;T&gt;).
    /// </summary>
    public static string IdName(ITypeSymbol type)
    {
        var builder = new StringBuilder();
        AppendIdName(builder, type);
        return builder.ToString();
    }

    private static void AppendIdName(StringBuilder builder, ITypeSymbol type)
    {
        switch (type)
        {
            case IArrayTypeSymbol array:
                AppendIdName(builder, array.ElementType);
                builder.Append('[').Append(',', array.Rank - 1).Append(']');
                return;
            case IPointerTypeSymbol pointer:
                AppendIdName(builder, pointer.PointedAtType);
                builder.Append('*');
                return;
            case IDynamicTypeSymbol:
                builder.Append("System.Object");
                return;
            case INamedTypeSymbol named:
                if (named.ContainingType is not null)
                {
                    AppendIdName(builder, named.ContainingType);
                    builder.Append('.');
                }
                else if (named.ContainingNamespace is { IsGlobalNamespace: false } ns)
                {
                    AppendIdName(builder, ns);
                    builder.Append('.');
                }

                builder.Append(named.Name); // The name itself: a keyword without its '@'.
                if (named.TypeArguments.Length > 0)
                {
                    builder.Append('<');
                    for (int i = 0; i < named.TypeArguments.Length; i++)
                    {
                        if (i > 0)
                        {
                            builder.Append(',');
                        }

                        AppendIdName(builder, named.TypeArguments[i]);
                    }

                    builder.Append('>');
                }

                return;
            default:
                builder.Append(type.ToDisplayString());
                return;
        }
    }

    /// <summary>The namespace's names joined with '.', as protocol.md spells them: a keyword
    /// namespace (<c>Audit.@event</c>) without C#'s '@' (<c>Audit.event</c>), unlike ToDisplayString.</summary>
    private static void AppendIdName(StringBuilder builder, INamespaceSymbol ns)
    {
        if (ns.ContainingNamespace is { IsGlobalNamespace: false } parent)
        {
            AppendIdName(builder, parent);
            builder.Append('.');
        }

        builder.Append(ns.Name);
    }

    /// <summary>Whether the type is, or holds, a pointer or function pointer (as an array's element
    /// or a type argument): a type only unsafe code can name.</summary>
    public static bool ContainsPointer(ITypeSymbol type) => type switch
    {
        IPointerTypeSymbol or IFunctionPointerTypeSymbol => true,
        IArrayTypeSymbol array => ContainsPointer(array.ElementType),
        INamedTypeSymbol named => named.TypeArguments.Any(ContainsPointer) || (named.ContainingType is { } outer && ContainsPointer(outer)),
        _ => false,
    };

    /// <summary>A file name for generated source: the type's full name, '+' between nested types.</summary>
    public static string HintName(INamedTypeSymbol type, string suffix)
    {
        var parts = new Stack<string>();
        for (INamedTypeSymbol? current = type; current is not null; current = current.ContainingType)
        {
            parts.Push(current.MetadataName);
        }

        var builder = new StringBuilder();
        if (type.ContainingNamespace is { IsGlobalNamespace: false } ns)
        {
            builder.Append(ns.ToDisplayString()).Append('.');
        }

        builder.Append(string.Join("+", parts));
        var safe = new StringBuilder(builder.Length + suffix.Length + 1);
        foreach (char c in builder.ToString())
        {
            safe.Append(char.IsLetterOrDigit(c) || c is '.' or '+' or '_' or '`' ? c : '_');
        }

        return safe.Append('.').Append(suffix).Append(".g.cs").ToString();
    }

    /// <summary>Whether code generated into <paramref name="compilation"/> can name the symbol and
    /// everything that contains it (so private and protected nested types are out, and so are file
    /// types, which the compilation counts as accessible but the generated file cannot see).</summary>
    public static bool IsAccessible(ISymbol symbol, Compilation compilation)
    {
        for (ISymbol? current = symbol; current is not null; current = current.ContainingType)
        {
            if (current is INamedTypeSymbol { IsFileLocal: true })
            {
                return false;
            }
        }

        return compilation.IsSymbolAccessibleWithin(symbol, compilation.Assembly);
    }

    /// <summary>Whether the symbol is <c>[Obsolete(..., true)]</c>: generated code cannot name it at all
    /// (CS0619 is an error no pragma turns off), unlike a warning, which the generated files disable.</summary>
    public static bool IsObsoleteAsError(ISymbol symbol) =>
        symbol.GetAttributes().Any(a => a.AttributeClass?.ToDisplayString() == "System.ObsoleteAttribute"
            && a.ConstructorArguments.Length == 2 && a.ConstructorArguments[1].Value is true);

    /// <summary>
    /// Adds the diagnostic ids of the <c>[Experimental]</c> APIs that naming <paramref name="symbol"/>
    /// uses: its own, its containing types', its assembly's and module's, and for a type those of
    /// its type arguments and array elements. Each is an error until suppressed; generated code
    /// suppresses them because the contract's author opted in where they declared the contract.
    /// </summary>
    public static void AddExperimentalIds(ISymbol? symbol, SortedSet<string> ids)
    {
        switch (symbol)
        {
            case null:
                return;
            case IArrayTypeSymbol array:
                AddExperimentalIds(array.ElementType, ids);
                return;
            case INamedTypeSymbol named when !SymbolEqualityComparer.Default.Equals(named, named.OriginalDefinition):
                foreach (ITypeSymbol argument in named.TypeArguments)
                {
                    AddExperimentalIds(argument, ids);
                }

                break;
        }

        for (ISymbol? current = symbol; current is not null; current = current.ContainingType)
        {
            AddExperimentalIds(current.GetAttributes(), ids);
        }

        AddExperimentalIds(symbol.ContainingModule?.GetAttributes() ?? [], ids);
        AddExperimentalIds(symbol.ContainingAssembly?.GetAttributes() ?? [], ids);
    }

    private static void AddExperimentalIds(IEnumerable<AttributeData> attributes, SortedSet<string> ids)
    {
        foreach (AttributeData attribute in attributes)
        {
            // An id that is not an identifier cannot follow #pragma warning disable; its error stays.
            if (attribute.AttributeClass?.ToDisplayString() == "System.Diagnostics.CodeAnalysis.ExperimentalAttribute"
                && attribute.ConstructorArguments.Length == 1 && attribute.ConstructorArguments[0].Value is string id
                && SyntaxFacts.IsValidIdentifier(id))
            {
                ids.Add(id);
            }
        }
    }

    /// <summary>A method id as a C# literal.</summary>
    public static string IdLiteral(uint id) => "0x" + id.ToString("X8", CultureInfo.InvariantCulture) + "u";
}
