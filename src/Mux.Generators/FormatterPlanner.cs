using System.Collections.Generic;
using Microsoft.CodeAnalysis;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>
/// Walks the types of parameters, results and members, and collects the MessagePack formatters to
/// register for them (lists, arrays, dictionaries, nullables, enums: registered up front so that
/// Native AOT never needs MessagePack's run-time generic instantiation), the [MessagePackObject] and
/// [Union] types they reach, and the types nothing can serialize.
/// </summary>
internal sealed class FormatterPlanner
{
    private const string Formatters = "global::MessagePack.Formatters.";

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

    /// <summary>The [MessagePackObject] and [Union] types reached.</summary>
    public IReadOnlyList<INamedTypeSymbol> Objects => _objects;

    /// <summary>Visits a type and everything it contains, and reports MUX010 for each type found that has no formatter.</summary>
    /// <param name="type">The type.</param>
    /// <param name="report">Whether to report at all (false for a member of a base service, which reports its own).</param>
    /// <param name="diagnostics">Receives the reports.</param>
    /// <param name="location">Where they point.</param>
    /// <param name="usedBy">What uses the type, as the message says it: "parameter 'x' of 'IService.Method'".</param>
    public void Visit(ITypeSymbol type, bool report, List<DiagnosticInfo> diagnostics, Location? location, string usedBy)
    {
        var unsupported = new List<ITypeSymbol>();
        Visit(type, unsupported, report);
        foreach (ITypeSymbol missing in unsupported)
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.NoFormatter, location, TypeNames.ForMessage(missing), usedBy));
        }
    }

    /// <summary>Visits a type and everything it contains.</summary>
    /// <param name="type">The type.</param>
    /// <param name="unsupported">Receives the types found that have no formatter.</param>
    /// <param name="report">Whether to collect unsupported types at this level (false inside a
    /// [MessagePackObject] type of this compilation, which reports its own members).</param>
    private void Visit(ITypeSymbol type, List<ITypeSymbol> unsupported, bool report)
    {
        if (type.TypeKind == TypeKind.Error || _known.IsBuiltin(type))
        {
            return;
        }

        if (KnownTypes.TryGetNullableUnderlying(type, out ITypeSymbol? underlying))
        {
            Add(TypeNames.Plain(type), Formatters + "NullableFormatter<" + TypeNames.Plain(underlying!) + ">");
            Visit(underlying!, unsupported, report);
            return;
        }

        if (type.TypeKind == TypeKind.Enum)
        {
            string name = TypeNames.Plain(type);
            Add(name, Formatters + "GenericEnumFormatter<" + name + ">");
            return;
        }

        if (type is IArrayTypeSymbol { Rank: 1 } array)
        {
            Add(TypeNames.Plain(type) + "?", Formatters + "ArrayFormatter<" + TypeNames.Plain(array.ElementType) + ">");
            Visit(array.ElementType, unsupported, report);
            return;
        }

        // A stream travels as frames of its call, only as a parameter or result of its own.
        if (type is INamedTypeSymbol named && !KnownTypes.Is(named, _known.AsyncEnumerable))
        {
            if (KnownTypes.Is(named, _known.List))
            {
                Add(TypeNames.Plain(type) + "?", Formatters + "ListFormatter<" + TypeNames.Plain(named.TypeArguments[0]) + ">");
                Visit(named.TypeArguments[0], unsupported, report);
                return;
            }

            if (KnownTypes.Is(named, _known.Dictionary))
            {
                Add(
                    TypeNames.Plain(type) + "?",
                    Formatters + "DictionaryFormatter<" + TypeNames.Plain(named.TypeArguments[0]) + ", " + TypeNames.Plain(named.TypeArguments[1]) + ">");
                Visit(named.TypeArguments[0], unsupported, report);
                Visit(named.TypeArguments[1], unsupported, report);
                return;
            }

            if (_known.HasAttribute(named.OriginalDefinition, _known.MessagePackFormatterAttribute))
            {
                return; // The type names its own formatter; MessagePack's AttributeFormatterResolver uses it.
            }

            if (_known.HasAttribute(named.OriginalDefinition, _known.MessagePackObjectAttribute)
                || (_known.HasAttribute(named, _known.UnionAttribute) && named.IsAbstract))
            {
                // A generic type, or one with a member that names its own formatter, is left to
                // MessagePack's own resolvers at run time.
                if (!named.IsGenericType && !ObjectMembers.HasMemberFormatter(named, _known) && _visitedObjects.Add(named))
                {
                    _objects.Add(named);
                    bool local = SymbolEqualityComparer.Default.Equals(named.ContainingAssembly, _known.Compilation.Assembly);
                    foreach (ITypeSymbol reached in ObjectParser.ReachedTypes(named, _known))
                    {
                        Visit(reached, unsupported, report && !local);
                    }
                }

                return;
            }

            if (named.IsGenericType)
            {
                // Other generic types (IReadOnlyList<T>, HashSet<T>, tuples, ...) are MessagePack's
                // DynamicGenericResolver's to handle: visit what they contain.
                foreach (ITypeSymbol argument in named.TypeArguments)
                {
                    Visit(argument, unsupported, report);
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
