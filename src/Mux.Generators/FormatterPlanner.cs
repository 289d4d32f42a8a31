using System.Collections.Generic;
using Microsoft.CodeAnalysis;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>
/// Walks the types of parameters, results and members, and collects the formatters to register
/// for them (lists, arrays, dictionaries, nullables, enums), the [MuxObject] types they reach, and
/// the types Mux has no formatter for.
/// </summary>
internal sealed class FormatterPlanner
{
    private const string Serialization = "global::Mux.Serialization.";

    private readonly KnownTypes _known;
    private readonly List<FormatterRegistration> _registrations = new();
    private readonly HashSet<string> _registered = new();
    private readonly HashSet<ITypeSymbol> _visitedObjects = new(SymbolEqualityComparer.Default);
    private readonly List<INamedTypeSymbol> _objects = new();

    public FormatterPlanner(KnownTypes known)
    {
        _known = known;
    }

    /// <summary>The formatters to register, in the order they were found.</summary>
    public IReadOnlyList<FormatterRegistration> Registrations => _registrations;

    /// <summary>The [MuxObject] types reached.</summary>
    public IReadOnlyList<INamedTypeSymbol> Objects => _objects;

    /// <summary>Visits a type and everything it contains.</summary>
    /// <param name="type">The type.</param>
    /// <param name="unsupported">Receives the types found that have no formatter.</param>
    /// <param name="report">Whether to collect unsupported types at this level (false inside a
    /// [MuxObject] type of this compilation, which reports its own members).</param>
    public void Visit(ITypeSymbol type, List<ITypeSymbol> unsupported, bool report = true)
    {
        if (type.TypeKind == TypeKind.Error || _known.IsBuiltin(type))
        {
            return;
        }

        if (KnownTypes.TryGetNullableUnderlying(type, out ITypeSymbol? underlying))
        {
            Add(TypeNames.Plain(type), Serialization + "NullableFormatter<" + TypeNames.Plain(underlying!) + ">");
            Visit(underlying!, unsupported, report);
            return;
        }

        if (type.TypeKind == TypeKind.Enum)
        {
            string name = TypeNames.Plain(type);
            Add(name, Serialization + "EnumFormatter<" + name + ">");
            return;
        }

        if (type is IArrayTypeSymbol { Rank: 1 } array)
        {
            Add(TypeNames.Plain(type) + "?", Serialization + "ArrayFormatter<" + TypeNames.Plain(array.ElementType) + ">");
            Visit(array.ElementType, unsupported, report);
            return;
        }

        if (type is INamedTypeSymbol named)
        {
            if (KnownTypes.Is(named, _known.List))
            {
                Add(TypeNames.Plain(type) + "?", Serialization + "ListFormatter<" + TypeNames.Plain(named.TypeArguments[0]) + ">");
                Visit(named.TypeArguments[0], unsupported, report);
                return;
            }

            if (KnownTypes.Is(named, _known.Dictionary))
            {
                Add(
                    TypeNames.Plain(type) + "?",
                    Serialization + "DictionaryFormatter<" + TypeNames.Plain(named.TypeArguments[0]) + ", " + TypeNames.Plain(named.TypeArguments[1]) + ">");
                Visit(named.TypeArguments[0], unsupported, report);
                Visit(named.TypeArguments[1], unsupported, report);
                return;
            }

            if (_known.HasAttribute(named.OriginalDefinition, _known.MuxObjectAttribute))
            {
                // A generic [MuxObject] type is reported (MUX011) where it is declared.
                if (!named.IsGenericType && _visitedObjects.Add(named))
                {
                    _objects.Add(named);
                    bool local = SymbolEqualityComparer.Default.Equals(named.ContainingAssembly, _known.Compilation.Assembly);
                    foreach (SerializedMember member in ObjectMembers.Select(named, _known, problems: null))
                    {
                        Visit(member.Type, unsupported, report && !local);
                    }
                }

                return;
            }
        }

        if (report && !unsupported.Exists(t => SymbolEqualityComparer.Default.Equals(t, type)))
        {
            unsupported.Add(type);
        }
    }

    private void Add(string typeArgument, string formatter)
    {
        if (_registered.Add(typeArgument))
        {
            _registrations.Add(new FormatterRegistration(typeArgument, formatter));
        }
    }
}
