using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp.Syntax;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>
/// Generates, for each <c>[MuxService]</c> interface, a client proxy, a server dispatcher and a
/// module initializer that registers both; and for each <c>[MessagePackObject]</c> type and
/// <c>[Union]</c> type, a MessagePack formatter and its registration.
/// </summary>
[Generator(LanguageNames.CSharp)]
public sealed class MuxGenerator : IIncrementalGenerator
{
    /// <inheritdoc/>
    public void Initialize(IncrementalGeneratorInitializationContext context)
    {
        IncrementalValuesProvider<ServiceResult> services = context.SyntaxProvider.ForAttributeWithMetadataName(
            "Mux.MuxServiceAttribute",
            predicate: static (node, _) => node is InterfaceDeclarationSyntax,
            transform: static (ctx, ct) => ServiceParser.Parse((INamedTypeSymbol)ctx.TargetSymbol, new KnownTypes(ctx.SemanticModel.Compilation), ct));

        // [MessagePackObject] types and [Union] interfaces/abstract classes of this compilation get a
        // formatter whether a contract uses them or not: cheap, and the generated resolver then
        // covers every type Native AOT would otherwise need MessagePack's run-time code generation for.
        IncrementalValuesProvider<ObjectResult> objects = context.SyntaxProvider.ForAttributeWithMetadataName(
            "MessagePack.MessagePackObjectAttribute",
            predicate: static (node, _) => node is TypeDeclarationSyntax and not InterfaceDeclarationSyntax,
            transform: static (ctx, _) => ObjectParser.Parse((INamedTypeSymbol)ctx.TargetSymbol, new KnownTypes(ctx.SemanticModel.Compilation), reportDiagnostics: true));

        IncrementalValuesProvider<ObjectResult> unions = context.SyntaxProvider.ForAttributeWithMetadataName(
            "MessagePack.UnionAttribute",
            predicate: static (node, _) => node is TypeDeclarationSyntax,
            transform: static (ctx, _) => ctx.TargetSymbol is INamedTypeSymbol { IsAbstract: true } union
                ? ObjectParser.Parse(union, new KnownTypes(ctx.SemanticModel.Compilation), reportDiagnostics: true)
                : new ObjectResult(null, EquatableArray<DiagnosticInfo>.Empty));

        objects = objects.Collect().Combine(unions.Collect()).SelectMany(static (pair, _) => pair.Left.AddRange(pair.Right));

        // Sources depend on the models only, so an edit elsewhere regenerates nothing.
        context.RegisterSourceOutput(services.Select(static (r, _) => r.Model), static (spc, model) =>
        {
            if (model is not null)
            {
                spc.AddSource(model.HintName, Emitter.EmitService(model));
            }
        });

        context.RegisterSourceOutput(objects.Select(static (r, _) => r.Model), static (spc, model) =>
        {
            if (model is not null)
            {
                spc.AddSource(model.HintName, Emitter.EmitObject(model));
            }
        });

        // Diagnostics are kept as values; the compilation turns them back into locations in its
        // syntax trees (so #pragma warning disable and the IDE see them). Only results that have
        // diagnostics pay for the combination.
        IncrementalValuesProvider<EquatableArray<DiagnosticInfo>> diagnostics = services
            .Select(static (r, _) => r.Diagnostics)
            .Collect()
            .Combine(objects.Select(static (r, _) => r.Diagnostics).Collect())
            .SelectMany(static (pair, _) => pair.Left.AddRange(pair.Right))
            .Where(static d => d.Count > 0);

        context.RegisterSourceOutput(diagnostics.Combine(context.CompilationProvider), static (spc, pair) =>
        {
            foreach (DiagnosticInfo diagnostic in pair.Left)
            {
                spc.ReportDiagnostic(diagnostic.ToDiagnostic(pair.Right));
            }
        });
    }
}
