using System;
using System.Collections.Generic;
using Microsoft.CodeAnalysis;

namespace Mux.Generators;

/// <summary>A field or property of a [MuxObject] type that is written at <see cref="Key"/>.</summary>
internal sealed class SerializedMember
{
    public SerializedMember(ISymbol symbol, ITypeSymbol type, int key)
    {
        Symbol = symbol;
        Type = type;
        Key = key;
    }

    public ISymbol Symbol { get; }

    public ITypeSymbol Type { get; }

    public int Key { get; }

    public string Name => Symbol.Name;
}

/// <summary>Which members of a [MuxObject] type are serialized, and at which index.</summary>
internal static class ObjectMembers
{
    /// <summary>
    /// The instance fields and properties of the type and its base classes, base members first,
    /// in declaration order; a member that hides or overrides a base member takes its place.
    /// </summary>
    public static List<ISymbol> GetCandidates(INamedTypeSymbol type)
    {
        var chain = new Stack<INamedTypeSymbol>();
        for (INamedTypeSymbol? current = type;
             current is not null && current.SpecialType is not (SpecialType.System_Object or SpecialType.System_ValueType);
             current = current.BaseType)
        {
            chain.Push(current);
        }

        var members = new List<ISymbol>();
        foreach (INamedTypeSymbol declaring in chain)
        {
            foreach (ISymbol member in declaring.GetMembers())
            {
                if (!IsCandidate(member))
                {
                    continue;
                }

                int existing = members.FindIndex(m => m.Name == member.Name);
                if (existing >= 0)
                {
                    members[existing] = member;
                }
                else
                {
                    members.Add(member);
                }
            }
        }

        return members;
    }

    private static bool IsCandidate(ISymbol member) => member switch
    {
        IFieldSymbol field => !field.IsStatic && !field.IsConst && !field.IsImplicitlyDeclared && field.AssociatedSymbol is null,
        IPropertySymbol property => !property.IsStatic && !property.IsIndexer && property.RefKind == RefKind.None,
        _ => false,
    };

    public static ITypeSymbol TypeOf(ISymbol member) => member is IFieldSymbol field ? field.Type : ((IPropertySymbol)member).Type;

    /// <summary>
    /// The serialized members, ordered by key. With [MuxKey] on any member, those members at their
    /// keys; otherwise every public field and every property with a public getter, numbered in order.
    /// </summary>
    /// <param name="type">The [MuxObject] type.</param>
    /// <param name="known">The compilation's known types.</param>
    /// <param name="problems">Receives what is wrong with a [MuxKey] member, if anything.</param>
    public static List<SerializedMember> Select(INamedTypeSymbol type, KnownTypes known, List<(ISymbol Member, string Reason)>? problems)
    {
        List<ISymbol> candidates = GetCandidates(type);
        var keyed = new List<SerializedMember>();
        var byKey = new Dictionary<int, ISymbol>();
        bool anyKey = false;
        foreach (ISymbol member in candidates)
        {
            AttributeData? key = KnownTypes.GetAttribute(member, known.MuxKeyAttribute);
            if (key is null)
            {
                continue;
            }

            anyKey = true;
            int index = key.ConstructorArguments.Length == 1 && key.ConstructorArguments[0].Value is int value ? value : -1;
            if (index < 0)
            {
                problems?.Add((member, $"Member '{member.Name}' has [MuxKey({index})], but an index must not be negative"));
                continue;
            }

            if (!IsReadable(member, known.Compilation))
            {
                problems?.Add((member, $"Member '{member.Name}' has [MuxKey] but generated code cannot read it: give it a public or internal getter"));
                continue;
            }

            if (byKey.TryGetValue(index, out ISymbol? other))
            {
                problems?.Add((member, $"Members '{other.Name}' and '{member.Name}' both have [MuxKey({index})]: give each member its own index"));
                continue;
            }

            byKey.Add(index, member);
            keyed.Add(new SerializedMember(member, TypeOf(member), index));
        }

        if (anyKey)
        {
            keyed.Sort((a, b) => a.Key.CompareTo(b.Key));
            return keyed;
        }

        var members = new List<SerializedMember>();
        foreach (ISymbol member in candidates)
        {
            bool isPublic = member.DeclaredAccessibility == Accessibility.Public
                && (member is IFieldSymbol || ((IPropertySymbol)member).GetMethod is { DeclaredAccessibility: Accessibility.Public });
            if (isPublic)
            {
                members.Add(new SerializedMember(member, TypeOf(member), members.Count));
            }
        }

        return members;
    }

    private static bool IsReadable(ISymbol member, Compilation compilation) => member switch
    {
        IFieldSymbol field => TypeNames.IsAccessible(field, compilation),
        IPropertySymbol property => property.GetMethod is { } getter && TypeNames.IsAccessible(getter, compilation),
        _ => false,
    };

    /// <summary>Whether generated code can assign the member: returns false, or true with whether it is init-only.</summary>
    public static bool IsSettable(ISymbol member, Compilation compilation, out bool initOnly)
    {
        initOnly = false;
        switch (member)
        {
            case IFieldSymbol field:
                return !field.IsReadOnly && TypeNames.IsAccessible(field, compilation);
            case IPropertySymbol { SetMethod: { } setter }:
                initOnly = setter.IsInitOnly;
                return TypeNames.IsAccessible(setter, compilation);
            default:
                return false;
        }
    }

    public static bool IsRequired(ISymbol member) => member switch
    {
        IFieldSymbol field => field.IsRequired,
        IPropertySymbol property => property.IsRequired,
        _ => false,
    };

    public static bool NameMatches(string memberName, string parameterName) =>
        string.Equals(memberName, parameterName, StringComparison.OrdinalIgnoreCase);
}
