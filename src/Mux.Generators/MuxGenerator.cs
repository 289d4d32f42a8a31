using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp.Syntax;
using Mux.Generators.Model;

namespace Mux.Generators;

/// <summary>
/// Generates, for each <c>[MuxService]</c> interface, a client proxy, a server dispatcher and a
/// module initializer that registers both; and for each <c>[MuxObject]</c> type, a MessagePack
/// formatter and its registration.
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

        IncrementalValuesProvider<ObjectResult> objects = context.SyntaxProvider.ForAttributeWithMetadataName(
            "Mux.MuxObjectAttribute",
            predicate: static (node, _) => node is TypeDeclarationSyntax and not InterfaceDeclarationSyntax,
            transform: static (ctx, _) => ObjectParser.Parse((INamedTypeSymbol)ctx.TargetSymbol, new KnownTypes(ctx.SemanticModel.Compilation), reportDiagnostics: true));

        context.RegisterSourceOutput(services, static (spc, result) =>
        {
            foreach (DiagnosticInfo diagnostic in result.Diagnostics)
            {
                spc.ReportDiagnostic(diagnostic.ToDiagnostic());
            }

            if (result.Model is { } model)
            {
                spc.AddSource(model.HintName, Emitter.EmitService(model));
            }
        });

        context.RegisterSourceOutput(objects, static (spc, result) =>
        {
            foreach (DiagnosticInfo diagnostic in result.Diagnostics)
            {
                spc.ReportDiagnostic(diagnostic.ToDiagnostic());
            }

            if (result.Model is { } model)
            {
                spc.AddSource(model.HintName, Emitter.EmitObject(model));
            }
        });
    }
}
