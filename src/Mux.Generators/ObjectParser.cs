using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using Microsoft.CodeAnalysis;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>Turns a [MessagePackObject] or [Union] type into the model of its formatter, or into diagnostics.</summary>
internal static class ObjectParser
{
    /// <summary>The types a formatter for <paramref name="type"/> serializes: its members' types, or a
    /// union's case types.</summary>
    public static IEnumerable<ITypeSymbol> ReachedTypes(INamedTypeSymbol type, KnownTypes known)
    {
        if (IsUnion(type, known))
        {
            return UnionCases(type, known).Select(c => (ITypeSymbol)c.Type);
        }

        return ObjectMembers.Select(type, known, problems: null).Select(m => m.Type);
    }

    /// <summary>The ids of the [Experimental] APIs a formatter for <paramref name="type"/> uses: the
    /// type, its constructors, its serialized members and their types, or a union's case types.</summary>
    public static EquatableArray<string> ExperimentalIds(INamedTypeSymbol type, KnownTypes known)
    {
        var ids = new SortedSet<string>(System.StringComparer.Ordinal);
        AddExperimentalIds(type, known, ids);
        return new EquatableArray<string>(ids);
    }

    /// <summary>Adds what <see cref="ExperimentalIds"/> returns to <paramref name="ids"/>.</summary>
    public static void AddExperimentalIds(INamedTypeSymbol type, KnownTypes known, SortedSet<string> ids)
    {
        TypeNames.AddExperimentalIds(type, ids);
        foreach (IMethodSymbol constructor in type.InstanceConstructors)
        {
            TypeNames.AddExperimentalIds(constructor, ids);
        }

        foreach (ITypeSymbol reached in ReachedTypes(type, known))
        {
            TypeNames.AddExperimentalIds(reached, ids);
        }

        if (!IsUnion(type, known))
        {
            foreach (SerializedMember member in ObjectMembers.Select(type, known, problems: null))
            {
                TypeNames.AddExperimentalIds(member.Symbol, ids);
            }
        }
    }

    private static bool IsUnion(INamedTypeSymbol type, KnownTypes known) =>
        type.IsAbstract && known.HasAttribute(type, known.UnionAttribute);

    private static List<(int Key, INamedTypeSymbol Type)> UnionCases(INamedTypeSymbol type, KnownTypes known)
    {
        var cases = new List<(int, INamedTypeSymbol)>();
        foreach (AttributeData data in type.GetAttributes())
        {
            if (SymbolEqualityComparer.Default.Equals(data.AttributeClass, known.UnionAttribute)
                && data.ConstructorArguments.Length == 2
                && data.ConstructorArguments[0].Value is int key
                && data.ConstructorArguments[1].Value is INamedTypeSymbol caseType)
            {
                cases.Add((key, caseType));
            }
        }

        return cases;
    }

    private static ObjectModel? BuildUnion(INamedTypeSymbol type, KnownTypes known, List<DiagnosticInfo> diagnostics, Location? location, string typeName)
    {
        var planner = new FormatterPlanner(known);
        var cases = new List<UnionCaseModel>();
        var keys = new HashSet<int>();
        bool ok = true;
        foreach ((int key, INamedTypeSymbol caseType) in UnionCases(type, known))
        {
            if (!keys.Add(key))
            {
                ok = false;
                diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                    $"Two [Union] cases have the key {key}: give each case its own key"));
            }

            // The formatter casts the union to each case and back.
            if (caseType.IsUnboundGenericType || !known.Compilation.HasImplicitConversion(caseType, type))
            {
                ok = false;
                diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                    $"Its [Union] case '{TypeNames.ForMessage(caseType)}' does not implement or derive from it as a closed type: each case must be a type '{typeName}' can hold, such as a class that implements it"));
                continue;
            }

            planner.Visit(caseType, report: true, diagnostics, location, $"[Union] '{typeName}'");

            cases.Add(new UnionCaseModel(key, TypeNames.Plain(caseType)));
        }

        return ok
            ? new ObjectModel(TypeNames.HintName(type, "MuxUnion"), TypeNames.Plain(type), false, 2, EquatableArray<ObjectMemberModel>.Empty,
                EquatableArray<int>.Empty, new EquatableArray<FormatterRegistration>(planner.Registrations), false, new EquatableArray<UnionCaseModel>(cases),
                ExperimentalIds(type, known))
            : null;
    }

    public static ObjectResult Parse(INamedTypeSymbol type, KnownTypes known, bool reportDiagnostics)
    {
        var diagnostics = new List<DiagnosticInfo>();
        ObjectModel? model = Build(type, known, diagnostics);
        return new ObjectResult(model, reportDiagnostics ? new EquatableArray<DiagnosticInfo>(diagnostics) : EquatableArray<DiagnosticInfo>.Empty);
    }

    private static ObjectModel? Build(INamedTypeSymbol type, KnownTypes known, List<DiagnosticInfo> diagnostics)
    {
        Compilation compilation = known.Compilation;
        Location? location = SourceLocation(type, null);
        string typeName = TypeNames.ForMessage(type);

        if (IsGeneric(type))
        {
            return null; // Left to MessagePack's DynamicObjectResolver at run time (not available under Native AOT).
        }

        if (ObjectMembers.HasMemberFormatter(type, known))
        {
            return null; // Likewise: only MessagePack's own resolver honours a member's [MessagePackFormatter].
        }

        if (!TypeNames.IsAccessible(type, compilation))
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                "Generated code cannot see it: make the type public or internal, and every type it is nested in"));
            return null;
        }

        if (TypeNames.IsObsoleteAsError(type))
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                "It is [Obsolete] as an error, so a generated formatter cannot name it: remove [MessagePackObject], or make the [Obsolete] a warning"));
            return null;
        }

        if (type.IsRefLikeType)
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                "A ref struct cannot be serialized: make it a regular struct or a class"));
            return null;
        }

        if (IsUnion(type, known))
        {
            return BuildUnion(type, known, diagnostics, location, typeName);
        }

        var problems = new List<(ISymbol Member, string Reason)>();
        List<SerializedMember> members = ObjectMembers.Select(type, known, problems);
        foreach ((ISymbol member, string reason) in problems)
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, SourceLocation(member, location), typeName, reason));
        }

        if (problems.Count > 0)
        {
            return null;
        }

        // MUX009 would blame the constructors for what one member does.
        if (!type.InstanceConstructors.Any(c => known.HasAttribute(c, known.SetsRequiredMembersAttribute)))
        {
            foreach (ISymbol required in ObjectMembers.GetCandidates(type).Where(ObjectMembers.IsRequired))
            {
                if (!members.Exists(m => SymbolEqualityComparer.Default.Equals(m.Symbol, required)))
                {
                    diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, SourceLocation(required, location), typeName,
                        $"Its required member '{required.Name}' is not serialized, so a generated formatter cannot set it when it reads one: make it public with a [Key], or mark a constructor [SetsRequiredMembers]"));
                    return null;
                }
            }
        }

        if (!TryChooseConstructor(type, members, known, out IMethodSymbol? constructor, out SerializedMember[] constructorMembers))
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.NoUsableConstructor, location, typeName));
            return null;
        }

        bool setsRequired = known.HasAttribute(constructor!, known.SetsRequiredMembersAttribute);
        var planner = new FormatterPlanner(known);
        var memberModels = new List<ObjectMemberModel>(members.Count);
        foreach (SerializedMember member in members)
        {
            planner.Visit(member.Type, report: true, diagnostics, SourceLocation(member.Symbol, location), $"member '{typeName}.{member.Name}'");

            int parameterIndex = System.Array.IndexOf(constructorMembers, member);
            MemberAssignment assignment;
            string initialValue = "default!";
            if (parameterIndex >= 0)
            {
                assignment = MemberAssignment.Constructor;
                IParameterSymbol parameter = constructor!.Parameters[parameterIndex];
                if (parameter.HasExplicitDefaultValue)
                {
                    initialValue = DefaultValue(parameter);
                }
            }
            else if (ObjectMembers.IsSettable(member.Symbol, compilation, out bool initOnly))
            {
                assignment = ObjectMembers.IsRequired(member.Symbol) && !setsRequired
                    ? MemberAssignment.RequiredInitializer
                    : initOnly ? MemberAssignment.Initializer : MemberAssignment.Setter;
            }
            else
            {
                assignment = MemberAssignment.None;
            }

            memberModels.Add(new ObjectMemberModel(member.Key, TypeNames.Identifier(member.Name), TypeNames.Annotated(member.Type), initialValue, assignment, member.StringKey));
        }

        bool isMap = members.Count > 0 && members[0].StringKey is not null;
        int length = isMap ? members.Count : members.Count == 0 ? 0 : members[members.Count - 1].Key + 1;
        return new ObjectModel(
            TypeNames.HintName(type, "MuxObject"),
            TypeNames.Plain(type),
            type.IsValueType,
            length,
            new EquatableArray<ObjectMemberModel>(memberModels),
            new EquatableArray<int>(constructorMembers.Select(m => m.Key)),
            new EquatableArray<FormatterRegistration>(planner.Registrations),
            isMap,
            EquatableArray<UnionCaseModel>.Empty,
            ExperimentalIds(type, known));
    }

    /// <summary>
    /// Picks the constructor MessagePack-CSharp would: the one marked [SerializationConstructor], else
    /// the accessible constructor with the most parameters that all match serialized members, by name
    /// (ignoring case) and type, or for integer keys by position (parameter i is the member with key i).
    /// A parameterless constructor matches trivially.
    /// </summary>
    private static bool TryChooseConstructor(
        INamedTypeSymbol type,
        List<SerializedMember> members,
        KnownTypes known,
        out IMethodSymbol? chosen,
        out SerializedMember[] chosenMembers)
    {
        chosen = null;
        chosenMembers = [];
        if (type.IsAbstract || type.IsStatic)
        {
            return false;
        }

        List<ISymbol> required = ObjectMembers.GetCandidates(type).Where(ObjectMembers.IsRequired).ToList();
        IMethodSymbol? marked = type.InstanceConstructors.FirstOrDefault(c => known.HasAttribute(c, known.SerializationConstructorAttribute));
        foreach (IMethodSymbol constructor in marked is null ? type.InstanceConstructors : [marked])
        {
            if (!TypeNames.IsAccessible(constructor, known.Compilation) || TypeNames.IsObsoleteAsError(constructor) || (chosen is not null && constructor.Parameters.Length <= chosen.Parameters.Length))
            {
                continue;
            }

            SerializedMember[]? matched = MatchParameters(constructor, members, byPosition: false)
                ?? (members.Exists(m => m.StringKey is null) ? MatchParameters(constructor, members, byPosition: true) : null);
            bool usable = matched is not null;

            // Required members must be set in the object initializer unless the constructor says it sets them.
            if (usable && !known.HasAttribute(constructor, known.SetsRequiredMembersAttribute))
            {
                usable = required.All(r => members.Exists(m => SymbolEqualityComparer.Default.Equals(m.Symbol, r)));
            }

            if (usable)
            {
                chosen = constructor;
                chosenMembers = matched!;
            }
        }

        return chosen is not null;
    }

    private static SerializedMember[]? MatchParameters(IMethodSymbol constructor, List<SerializedMember> members, bool byPosition)
    {
        var matched = new SerializedMember[constructor.Parameters.Length];
        for (int i = 0; i < constructor.Parameters.Length; i++)
        {
            IParameterSymbol parameter = constructor.Parameters[i];
            int index = i;
            SerializedMember? member = members.FirstOrDefault(m =>
                (byPosition ? m.Key == index : ObjectMembers.NameMatches(m.Name, parameter.Name))
                && SymbolEqualityComparer.Default.Equals(m.Type, parameter.Type)
                && System.Array.IndexOf(matched, m) < 0);
            if (parameter.RefKind is not (RefKind.None or RefKind.In) || member is null)
            {
                return null;
            }

            matched[i] = member;
        }

        return matched;
    }

    private static bool IsGeneric(INamedTypeSymbol type)
    {
        for (INamedTypeSymbol? current = type; current is not null; current = current.ContainingType)
        {
            if (current.TypeParameters.Length > 0)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>A parameter's default value as a C# expression of the parameter's type.</summary>
    private static string DefaultValue(IParameterSymbol parameter)
    {
        object? value = parameter.ExplicitDefaultValue;
        string type = TypeNames.Plain(parameter.Type);
        switch (value)
        {
            case null:
                return "default!";
            case double d when double.IsNaN(d) || double.IsInfinity(d):
                return "(" + type + ")" + (double.IsNaN(d) ? "double.NaN" : d > 0 ? "double.PositiveInfinity" : "double.NegativeInfinity");
            case float f when float.IsNaN(f) || float.IsInfinity(f):
                return "(" + type + ")" + (float.IsNaN(f) ? "float.NaN" : f > 0 ? "float.PositiveInfinity" : "float.NegativeInfinity");
            case long l when l == long.MinValue:
                return "(" + type + ")long.MinValue";
            case int i when i == int.MinValue:
                return "(" + type + ")int.MinValue";
            case decimal m:
                return "(" + type + ")" + m.ToString(CultureInfo.InvariantCulture) + "m";
            default:
                return "(" + type + ")(" + Microsoft.CodeAnalysis.CSharp.SymbolDisplay.FormatPrimitive(value, quoteStrings: true, useHexadecimalNumbers: false) + ")";
        }
    }

    /// <summary>The symbol's first source location, or <paramref name="fallback"/>.</summary>
    public static Location? SourceLocation(ISymbol symbol, Location? fallback)
    {
        foreach (Location location in symbol.Locations)
        {
            if (location.IsInSource)
            {
                return location;
            }
        }

        return fallback;
    }
}
