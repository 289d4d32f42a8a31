using System.Collections.Generic;
using System.Globalization;
using System.Linq;
using Microsoft.CodeAnalysis;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>Turns a [MuxObject] type into the model of its formatter, or into diagnostics.</summary>
internal static class ObjectParser
{
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
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                "Generic [MuxObject] types are not supported: remove the type parameters, or register a formatter for each constructed type with MuxFormatterResolver.Register<T>"));
            return null;
        }

        if (!TypeNames.IsAccessible(type, compilation))
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                "Generated code cannot see it: make the type public or internal, and every type it is nested in"));
            return null;
        }

        if (type.IsRefLikeType)
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, location, typeName,
                "A ref struct cannot be serialized: make it a regular struct or a class"));
            return null;
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
            var unsupported = new List<ITypeSymbol>();
            planner.Visit(member.Type, unsupported);
            foreach (ITypeSymbol missing in unsupported)
            {
                diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.NoFormatter, SourceLocation(member.Symbol, location),
                    TypeNames.ForMessage(missing), $"member '{typeName}.{member.Name}'"));
            }

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

            memberModels.Add(new ObjectMemberModel(member.Key, TypeNames.Identifier(member.Name), TypeNames.Annotated(member.Type), initialValue, assignment));
        }

        int length = members.Count == 0 ? 0 : members[members.Count - 1].Key + 1;
        return new ObjectModel(
            TypeNames.HintName(type, "MuxObject"),
            TypeNames.Plain(type),
            type.IsValueType,
            length,
            new EquatableArray<ObjectMemberModel>(memberModels),
            new EquatableArray<int>(constructorMembers.Select(m => m.Key)),
            new EquatableArray<FormatterRegistration>(planner.Registrations));
    }

    /// <summary>
    /// Picks the accessible constructor with the most parameters whose parameters all match
    /// serialized members by name (ignoring case) and type; a parameterless one matches trivially.
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
        foreach (IMethodSymbol constructor in type.InstanceConstructors)
        {
            if (!TypeNames.IsAccessible(constructor, known.Compilation) || (chosen is not null && constructor.Parameters.Length <= chosen.Parameters.Length))
            {
                continue;
            }

            var matched = new SerializedMember[constructor.Parameters.Length];
            bool usable = true;
            for (int i = 0; i < constructor.Parameters.Length && usable; i++)
            {
                IParameterSymbol parameter = constructor.Parameters[i];
                SerializedMember? member = members.FirstOrDefault(m =>
                    ObjectMembers.NameMatches(m.Name, parameter.Name)
                    && SymbolEqualityComparer.Default.Equals(m.Type, parameter.Type)
                    && System.Array.IndexOf(matched, m) < 0);
                usable = parameter.RefKind is RefKind.None or RefKind.In && member is not null;
                matched[i] = member!;
            }

            // Required members must be set in the object initializer unless the constructor says it sets them.
            if (usable && !known.HasAttribute(constructor, known.SetsRequiredMembersAttribute))
            {
                usable = required.All(r => members.Exists(m => SymbolEqualityComparer.Default.Equals(m.Symbol, r)));
            }

            if (usable)
            {
                chosen = constructor;
                chosenMembers = matched;
            }
        }

        return chosen is not null;
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
