using System.Collections.Generic;
using System.Linq;
using System.Threading;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>Turns a [MuxService] interface into the model of its proxy and dispatcher, or into diagnostics.</summary>
internal static class ServiceParser
{
    public static ServiceResult Parse(INamedTypeSymbol service, KnownTypes known, CancellationToken cancellationToken)
    {
        var diagnostics = new List<DiagnosticInfo>();
        ServiceModel? model = Build(service, known, diagnostics, cancellationToken);
        return new ServiceResult(model, new EquatableArray<DiagnosticInfo>(diagnostics));
    }

    private static ServiceModel? Build(INamedTypeSymbol service, KnownTypes known, List<DiagnosticInfo> diagnostics, CancellationToken cancellationToken)
    {
        Compilation compilation = known.Compilation;
        Location? serviceLocation = ObjectParser.SourceLocation(service, null);
        string serviceName = TypeNames.ForMessage(service);

        for (INamedTypeSymbol? current = service; current is not null; current = current.ContainingType)
        {
            if (current.TypeParameters.Length > 0)
            {
                diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.GenericService, serviceLocation, serviceName));
                return null;
            }
        }

        if (!TypeNames.IsAccessible(service, compilation))
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, serviceLocation, serviceName,
                "Generated code cannot see it: make the interface public or internal, and every type it is nested in"));
            return null;
        }

        if (TypeNames.IsObsoleteAsError(service))
        {
            diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, serviceLocation, serviceName,
                "It is [Obsolete] as an error, so the generated proxy cannot implement it: remove [MuxService], or make the [Obsolete] a warning"));
            return null;
        }

        // A proxy lives as long as the client it calls through: Dispose or DisposeAsync in the contract
        // would be a call to the server (whose dispatcher would dispose the handler), not a release here.
        foreach (INamedTypeSymbol inherited in service.AllInterfaces)
        {
            if (inherited.SpecialType == SpecialType.System_IDisposable || KnownTypes.Is(inherited, known.AsyncDisposable))
            {
                string dispose = inherited.SpecialType == SpecialType.System_IDisposable ? "Dispose" : "DisposeAsync";
                diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, serviceLocation, serviceName,
                    $"It inherits {TypeNames.ForMessage(inherited)}, but a proxy lives as long as its client and its {dispose} would be a call to the server: remove {TypeNames.ForMessage(inherited)} from the contract and dispose the MuxClient instead (the service's implementation may still implement it)"));
                return null;
            }
        }

        // The service's own members, then those of every interface it inherits. Members of an
        // inherited interface that is a [MuxService] itself are checked there, so their errors are
        // reported once; they still keep this service from being generated.
        bool hasErrors = false;
        var methods = new List<(INamedTypeSymbol Declaring, IMethodSymbol Method, bool Report)>();
        foreach (INamedTypeSymbol declaring in new[] { service }.Concat(service.AllInterfaces))
        {
            bool report = SymbolEqualityComparer.Default.Equals(declaring, service) || !known.HasAttribute(declaring, known.MuxServiceAttribute);
            foreach (ISymbol member in declaring.GetMembers())
            {
                if (member.IsStatic && member.IsAbstract)
                {
                    // Such an interface cannot be a type argument (of MuxServiceDefinition<T>, say).
                    hasErrors = true;
                    if (report)
                    {
                        diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.InvalidDeclaration, ObjectParser.SourceLocation(member, serviceLocation), serviceName,
                            $"Its static abstract member '{member.Name}' keeps it from being a type argument: make the member non-abstract or move it to another interface"));
                    }

                    continue;
                }

                // Static members and members with a body run locally; only abstract members are calls.
                if (member.IsStatic || !member.IsAbstract)
                {
                    continue;
                }

                // So does an inherited member the service (or an interface between) gives a body
                // (Task<int> IBase.R() => ...): the proxy need not implement it, and the service does
                // not serve it, as for a body declared on the service. Without one most specific body
                // (two, or one made abstract again) the proxy must implement it: it stays a call.
                if (!SymbolEqualityComparer.Default.Equals(declaring, service) && service.FindImplementationForInterfaceMember(member) is { IsAbstract: false })
                {
                    continue;
                }

                switch (member)
                {
                    case IMethodSymbol { MethodKind: MethodKind.Ordinary } method:
                        methods.Add((declaring, method, report));
                        break;
                    case IPropertySymbol property:
                        hasErrors = true;
                        Report(report, DiagnosticDescriptors.PropertyNotSupported, property, property.IsIndexer ? "this[]" : property.Name, TypeNames.ForMessage(declaring));
                        break;
                    case IEventSymbol @event:
                        hasErrors = true;
                        Report(report, DiagnosticDescriptors.EventNotSupported, @event, @event.Name, TypeNames.ForMessage(declaring));
                        break;
                }
            }
        }

        var overloaded = new HashSet<string>(methods.GroupBy(m => m.Method.Name).Where(g => g.Count() > 1).Select(g => g.Key));
        var planner = new FormatterPlanner(known);
        var models = new List<MethodModel>(methods.Count);
        var byId = new Dictionary<uint, (string Name, IMethodSymbol Method, bool Report)>();
        foreach ((INamedTypeSymbol declaring, IMethodSymbol method, bool report) in methods)
        {
            cancellationToken.ThrowIfCancellationRequested();
            string methodName = TypeNames.ForMessage(declaring) + "." + method.Name;
            // A method of a plain interface the service inherits (IEnumerable<T>, say) is named with
            // it, and the service, not that interface, is the "Mux service" the message names.
            string shortName = SymbolEqualityComparer.Default.Equals(declaring, service) ? method.Name : methodName;
            if (!CheckMethod(method, methodName, shortName, serviceName, known, report, diagnostics, serviceLocation, out ReturnKind returnKind, out ITypeSymbol? resultType))
            {
                hasErrors = true;
                continue;
            }

            Location? methodLocation = ObjectParser.SourceLocation(method, serviceLocation);
            var parameters = new List<ParameterModel>(method.Parameters.Length);
            var signature = new List<string>();
            foreach (IParameterSymbol parameter in method.Parameters)
            {
                bool isToken = known.IsCancellationToken(parameter.Type);
                bool isContext = known.IsCallContext(parameter.Type);
                ITypeSymbol? streamItem = known.StreamItemType(parameter.Type);
                parameters.Add(new ParameterModel(TypeNames.Identifier(parameter.Name), TypeNames.Annotated(parameter.Type), isToken, parameter.IsParams, isContext,
                    streamItem is null ? null : TypeNames.Annotated(streamItem)));
                if (isToken || isContext)
                {
                    continue;
                }

                signature.Add(TypeNames.IdName(parameter.Type));
                planner.Visit(streamItem ?? parameter.Type, report, diagnostics, ObjectParser.SourceLocation(parameter, methodLocation), $"parameter '{parameter.Name}' of '{methodName}'");
            }

            if (resultType is not null)
            {
                planner.Visit(resultType, report, diagnostics, methodLocation, $"the result of '{methodName}'");
            }

            // "Namespace.IService.Method", or "Namespace.IService.Method(T1,T2)" for an overloaded name.
            string tail = overloaded.Contains(method.Name) ? method.Name + "(" + string.Join(",", signature) + ")" : method.Name;
            string idName = TypeNames.IdName(declaring) + "." + tail;
            uint id = MethodIds.Compute(idName);
            if (byId.TryGetValue(id, out (string Name, IMethodSymbol Method, bool Report) first))
            {
                hasErrors = true;
                if (report || first.Report)
                {
                    // Equal names: overloads whose only difference is a parameter that does not travel.
                    bool sameName = first.Name == idName;
                    diagnostics.Add(DiagnosticInfo.Create(DiagnosticDescriptors.MethodIdCollision, methodLocation,
                        sameName ? TypeNames.ForMessage(first.Method) : first.Name, sameName ? TypeNames.ForMessage(method) : idName,
                        serviceName, id.ToString("x8", System.Globalization.CultureInfo.InvariantCulture),
                        sameName ? "The parameters they send have the same types (CancellationToken and MuxCallContext parameters are not sent, nor part of the id), so they are one method to Mux: remove one, or rename it" : "Rename one of them"));
                }

                continue;
            }

            byId.Add(id, (idName, method, report));
            models.Add(new MethodModel(
                TypeNames.Annotated(declaring), // IBase<string?>: the proxy implements it as declared.
                TypeNames.Identifier(method.Name),
                tail,
                id,
                returnKind,
                TypeNames.Annotated(method.ReturnType),
                resultType is null ? null : TypeNames.Annotated(resultType),
                new EquatableArray<ParameterModel>(parameters)));
        }

        if (hasErrors)
        {
            return null;
        }

        var experimental = new SortedSet<string>(System.StringComparer.Ordinal);
        TypeNames.AddExperimentalIds(service, experimental);
        foreach ((INamedTypeSymbol declaring, IMethodSymbol method, _) in methods)
        {
            TypeNames.AddExperimentalIds(declaring, experimental);
            TypeNames.AddExperimentalIds(method, experimental);
            TypeNames.AddExperimentalIds(method.ReturnType, experimental);
            foreach (IParameterSymbol parameter in method.Parameters)
            {
                TypeNames.AddExperimentalIds(parameter.Type, experimental);
            }
        }

        // The registrations name the types the objects reach, and an object's formatter in this file its members.
        foreach (INamedTypeSymbol type in planner.Objects)
        {
            ObjectParser.AddExperimentalIds(type, known, experimental);
        }

        // [MessagePackObject] and [Union] types from other assemblies get a formatter here too: their
        // assembly may have no Mux generator, or its module initializer may not have run yet.
        var externalObjects = new List<ObjectModel>();
        foreach (INamedTypeSymbol type in planner.Objects)
        {
            if (!SymbolEqualityComparer.Default.Equals(type.ContainingAssembly, compilation.Assembly)
                && ObjectParser.Parse(type, known, reportDiagnostics: false).Model is { } external)
            {
                externalObjects.Add(external);
            }
        }

        return new ServiceModel(
            TypeNames.HintName(service, "MuxService"),
            TypeNames.Plain(service),
            TypeNames.IdName(service),
            new EquatableArray<MethodModel>(models),
            new EquatableArray<FormatterRegistration>(planner.Registrations),
            new EquatableArray<ObjectModel>(externalObjects),
            new EquatableArray<string>(experimental));

        void Report(bool report, DiagnosticDescriptor descriptor, ISymbol symbol, params string[] arguments)
        {
            if (report)
            {
                diagnostics.Add(DiagnosticInfo.Create(descriptor, ObjectParser.SourceLocation(symbol, serviceLocation), arguments));
            }
        }
    }

    /// <summary>Checks the method's shape (MUX001, MUX002, MUX003, MUX007); false if it has errors.</summary>
    private static bool CheckMethod(
        IMethodSymbol method,
        string methodName,
        string shortName,
        string serviceName,
        KnownTypes known,
        bool report,
        List<DiagnosticInfo> diagnostics,
        Location? serviceLocation,
        out ReturnKind returnKind,
        out ITypeSymbol? resultType)
    {
        Location? location = ObjectParser.SourceLocation(method, serviceLocation);
        bool ok = true;
        returnKind = default;
        resultType = null;

        if (method.IsGenericMethod)
        {
            ok = false;
            Add(DiagnosticDescriptors.GenericMethod, location, shortName, serviceName);
        }

        if (method.IsVararg)
        {
            ok = false;
            Add(DiagnosticDescriptors.InvalidDeclaration, location, methodName, "It takes __arglist, which a proxy cannot implement: pass the values as an array");
        }

        // A protected member, or an internal one of another assembly: the dispatcher cannot call it.
        if (!TypeNames.IsAccessible(method, known.Compilation))
        {
            ok = false;
            Add(DiagnosticDescriptors.InvalidDeclaration, location, methodName,
                $"It is {SyntaxFacts.GetText(method.DeclaredAccessibility)}, so the generated dispatcher cannot call it: make it public (every client may call a Mux method)");
        }

        // The dispatcher calls the method.
        if (TypeNames.IsObsoleteAsError(method))
        {
            ok = false;
            Add(DiagnosticDescriptors.InvalidDeclaration, location, methodName,
                "It is [Obsolete] as an error, so the generated dispatcher cannot call it: remove the method, or make the [Obsolete] a warning");
        }

        ITypeSymbol returnType = method.ReturnType;
        bool supported = true;
        if (KnownTypes.Is(returnType, known.Task))
        {
            returnKind = ReturnKind.Task;
        }
        else if (KnownTypes.Is(returnType, known.ValueTask))
        {
            returnKind = ReturnKind.ValueTask;
        }
        // Task<IAsyncEnumerable<T>> is not a stream: MessagePack has no formatter for its result.
        else if ((KnownTypes.Is(returnType, known.TaskOfT) || KnownTypes.Is(returnType, known.ValueTaskOfT))
            && known.StreamItemType(((INamedTypeSymbol)returnType).TypeArguments[0]) is null)
        {
            returnKind = KnownTypes.Is(returnType, known.TaskOfT) ? ReturnKind.TaskOfT : ReturnKind.ValueTaskOfT;
            resultType = ((INamedTypeSymbol)returnType).TypeArguments[0];
        }
        else if (known.StreamItemType(returnType) is { } streamed)
        {
            returnKind = ReturnKind.Stream;
            resultType = streamed;
        }
        else
        {
            supported = false;
        }

        // Returned by reference: the message names the reference, whose removal is the whole fix
        // when the type is right (ref Task M()).
        if (method.ReturnsByRef || method.ReturnsByRefReadonly)
        {
            string modifier = method.ReturnsByRefReadonly ? "ref readonly" : "ref";
            Add(DiagnosticDescriptors.UnsupportedReturnType, location, shortName, serviceName,
                $"'{TypeNames.ForMessage(returnType)}' by reference ('{modifier}')",
                supported ? $"remove '{modifier}' to return it by value" : $"remove '{modifier}' and change the return type");
            ok = false;
        }
        else if (!supported)
        {
            ok = false;
            Add(DiagnosticDescriptors.UnsupportedReturnType, location, shortName, serviceName, $"'{TypeNames.ForMessage(returnType)}'", "change the return type");
        }

        if (resultType is not null && TypeNames.ContainsPointer(resultType))
        {
            ok = false;
            Add(DiagnosticDescriptors.InvalidDeclaration, location, methodName,
                $"Its result has the type '{TypeNames.ForMessage(resultType)}', which is or holds a pointer: an address means nothing on the other side, so return the values it points at (an array or ReadOnlyMemory<T>)");
        }

        bool sawToken = false;
        IParameterSymbol? stream = null;
        foreach (IParameterSymbol parameter in method.Parameters)
        {
            Location? parameterLocation = ObjectParser.SourceLocation(parameter, location);
            if (parameter.RefKind != RefKind.None)
            {
                ok = false;
                string modifier = parameter.RefKind switch
                {
                    RefKind.Out => "out",
                    RefKind.In => "in",
                    RefKind.RefReadOnlyParameter => "ref readonly",
                    _ => "ref",
                };
                Add(DiagnosticDescriptors.ByRefParameter, parameterLocation, parameter.Name, methodName, modifier);
            }

            // The proxy keeps the arguments in a struct until they are written, and a formatter's
            // type argument cannot be a ref struct either.
            if (parameter.Type.IsRefLikeType)
            {
                ok = false;
                Add(DiagnosticDescriptors.InvalidDeclaration, parameterLocation, methodName,
                    $"Its parameter '{parameter.Name}' is a '{TypeNames.ForMessage(parameter.Type)}', a ref struct, which cannot be kept until it is sent: use an array or ReadOnlyMemory<T>");
            }

            // An address means nothing on the peer, and the generated code (no unsafe context)
            // could not even name the type: the user's build would fail in the generated file.
            if (TypeNames.ContainsPointer(parameter.Type))
            {
                ok = false;
                Add(DiagnosticDescriptors.InvalidDeclaration, parameterLocation, methodName,
                    $"Its parameter '{parameter.Name}' has the type '{TypeNames.ForMessage(parameter.Type)}', which is or holds a pointer: an address means nothing on the other side, so send the values it points at (an array or ReadOnlyMemory<T>)");
            }

            if (parameter.Type.TypeKind == TypeKind.Dynamic)
            {
                ok = false;
                Add(DiagnosticDescriptors.InvalidDeclaration, parameterLocation, methodName,
                    $"Its parameter '{parameter.Name}' is dynamic, which would bind the generated formatter's calls at run time: declare it object (MessagePack writes the same bytes)");
            }

            if (known.IsCancellationToken(parameter.Type))
            {
                if (sawToken)
                {
                    ok = false;
                    Add(DiagnosticDescriptors.MultipleCancellationTokens, parameterLocation, methodName, parameter.Name);
                }

                sawToken = true;
            }

            if (known.StreamItemType(parameter.Type) is not null)
            {
                if (stream is not null)
                {
                    ok = false;
                    Add(DiagnosticDescriptors.InvalidDeclaration, parameterLocation, methodName,
                        $"It takes two streams ('{stream.Name}' and '{parameter.Name}'); a call carries at most one IAsyncEnumerable<T> from the client: merge them into one stream of a type that holds either item");
                }
                else if (parameter.IsParams)
                {
                    ok = false;
                    Add(DiagnosticDescriptors.InvalidDeclaration, parameterLocation, methodName, $"Its stream parameter '{parameter.Name}' is declared params: remove 'params'");
                }

                stream ??= parameter;
            }
        }

        return ok;

        void Add(DiagnosticDescriptor descriptor, Location? where, params string[] arguments)
        {
            if (report)
            {
                diagnostics.Add(DiagnosticInfo.Create(descriptor, where, arguments));
            }
        }
    }
}
