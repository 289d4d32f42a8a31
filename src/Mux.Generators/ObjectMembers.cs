using System;
using System.Collections.Generic;
using Microsoft.CodeAnalysis;

namespace Mux.Generators;

/// <summary>A field or property of a [MessagePackObject] type: written at array index <see cref="Key"/>,
/// or under the map key <see cref="StringKey"/> (then <see cref="Key"/> is its position).</summary>
internal sealed class SerializedMember
{
    public SerializedMember(ISymbol symbol, ITypeSymbol type, int key, string? stringKey)
    {
        Symbol = symbol;
        Type = type;
        Key = key;
        StringKey = stringKey;
    }

    public string? StringKey { get; }

    public ISymbol Symbol { get; }

    public ITypeSymbol Type { get; }

    public int Key { get; }

    public string Name => Symbol.Name;
}

/// <summary>Which members of a [MessagePackObject] type are serialized, and under which key.</summary>
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

    /// <summary>
    /// Whether a member names its own formatter (<c>[MessagePackFormatter]</c> on a field or
    /// property). Such a type is left to MessagePack's DynamicObjectResolver, which honours the
    /// attribute, so its bytes stay exactly MessagePack's (at the price of Native AOT for that type).
    /// </summary>
    public static bool HasMemberFormatter(INamedTypeSymbol type, KnownTypes known)
    {
        foreach (ISymbol member in GetCandidates(type))
        {
            if (known.HasAttribute(member, known.MessagePackFormatterAttribute))
            {
                return true;
            }
        }

        return false;
    }

    public static ITypeSymbol TypeOf(ISymbol member) => member is IFieldSymbol field ? field.Type : ((IPropertySymbol)member).Type;

    /// <summary>
    /// The serialized members of a <c>[MessagePackObject]</c> type, by MessagePack-CSharp's rules:
    /// every public instance field and every property with a public getter, of the type and its base
    /// classes, except those marked <c>[IgnoreMember]</c>. Each carries <c>[Key(int)]</c> or
    /// <c>[Key(string)]</c>; with <c>[MessagePackObject(keyAsPropertyName: true)]</c> a member without
    /// <c>[Key]</c> is keyed by its name. Integer keys are ordered by key, string keys by declaration.
    /// </summary>
    /// <param name="type">The [MessagePackObject] type.</param>
    /// <param name="known">The compilation's known types.</param>
    /// <param name="problems">Receives what is wrong with a member, if anything.</param>
    public static List<SerializedMember> Select(INamedTypeSymbol type, KnownTypes known, List<(ISymbol Member, string Reason)>? problems)
    {
        AttributeData? objectAttribute = KnownTypes.GetAttribute(type, known.MessagePackObjectAttribute);
        bool keyAsPropertyName = objectAttribute is { ConstructorArguments.Length: > 0 } && objectAttribute.ConstructorArguments[0].Value is true;

        var members = new List<SerializedMember>();
        var intKeys = new Dictionary<int, ISymbol>();
        var stringKeys = new Dictionary<string, ISymbol>(StringComparer.Ordinal);
        foreach (ISymbol member in GetCandidates(type))
        {
            if (!IsPublicReadable(member) || known.HasAttribute(member, known.IgnoreMemberAttribute))
            {
                continue;
            }

            AttributeData? key = KnownTypes.GetAttribute(member, known.KeyAttribute);
            object? value = key is { ConstructorArguments.Length: 1 } ? key.ConstructorArguments[0].Value : null;
            if (value is null && keyAsPropertyName)
            {
                value = member.Name;
            }

            if (TypeNames.IsObsoleteAsError(member))
            {
                problems?.Add((member, $"Member '{member.Name}' is [Obsolete] as an error, so a generated formatter cannot read or write it: mark it [IgnoreMember], or make the [Obsolete] a warning"));
                continue;
            }

            if (TypeOf(member).TypeKind == TypeKind.Dynamic)
            {
                problems?.Add((member, $"Member '{member.Name}' is dynamic, which would bind the generated formatter's calls at run time: declare it object (MessagePack writes the same bytes)"));
                continue;
            }

            if (TypeNames.ContainsPointer(TypeOf(member)))
            {
                problems?.Add((member, $"Member '{member.Name}' has the type '{TypeNames.ForMessage(TypeOf(member))}', which is or holds a pointer: an address means nothing on the other side (and generated code cannot name the type outside unsafe code), so mark it [IgnoreMember] or serialize the values it points at"));
                continue;
            }

            switch (value)
            {
                case int index when index < 0:
                    problems?.Add((member, $"Member '{member.Name}' has [Key({index})], but an index must not be negative"));
                    break;
                case int.MaxValue:
                    problems?.Add((member, $"Member '{member.Name}' has [Key({int.MaxValue})], but the array would then need more than int.MaxValue elements (the largest key plus one): use a smaller key"));
                    break;
                case int index when intKeys.TryGetValue(index, out ISymbol? other):
                    problems?.Add((member, $"Members '{other.Name}' and '{member.Name}' both have [Key({index})]: give each member its own key"));
                    break;
                case int index:
                    intKeys.Add(index, member);
                    members.Add(new SerializedMember(member, TypeOf(member), index, null));
                    break;
                case string name when stringKeys.TryGetValue(name, out ISymbol? other):
                    problems?.Add((member, $"Members '{other.Name}' and '{member.Name}' both have the key \"{name}\": give each member its own key"));
                    break;
                case string name:
                    stringKeys.Add(name, member);
                    members.Add(new SerializedMember(member, TypeOf(member), stringKeys.Count - 1, name));
                    break;
                default:
                    problems?.Add((member, $"Public member '{member.Name}' of a [MessagePackObject] type has neither [Key] nor [IgnoreMember]: add [Key(n)] to serialize it or [IgnoreMember] to leave it out (MessagePack-CSharp requires one of them)"));
                    break;
            }
        }

        if (intKeys.Count > 0 && stringKeys.Count > 0)
        {
            problems?.Add((type, "Its members mix integer and string keys: use [Key(int)] on every member (a MessagePack array) or [Key(string)] on every member (a map)"));
        }

        if (stringKeys.Count == 0)
        {
            members.Sort((a, b) => a.Key.CompareTo(b.Key));
        }

        return members;
    }

    private static bool IsPublicReadable(ISymbol member) =>
        member.DeclaredAccessibility == Accessibility.Public
        && (member is IFieldSymbol || ((IPropertySymbol)member).GetMethod is { DeclaredAccessibility: Accessibility.Public });

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
