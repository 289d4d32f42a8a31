using System.Collections.Immutable;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.CSharp;
using Microsoft.CodeAnalysis.CSharp.Syntax;

namespace Mux.Generators.Tests;

/// <summary>What running the generator on a snippet produced.</summary>
/// <param name="Input">The snippet's compilation, before generation.</param>
/// <param name="Output">The compilation with the generated files added.</param>
/// <param name="GeneratorDiagnostics">What the generator reported (MUXnnn).</param>
/// <param name="RunResult">The generated sources.</param>
/// <param name="Driver">The driver, to run again incrementally.</param>
internal sealed record GeneratorRun(
    CSharpCompilation Input,
    Compilation Output,
    ImmutableArray<Diagnostic> GeneratorDiagnostics,
    GeneratorDriverRunResult RunResult,
    GeneratorDriver Driver)
{
    /// <summary>Errors and warnings of the compilation with the generated code, as the build would report them.</summary>
    public IReadOnlyList<Diagnostic> OutputProblems =>
        Output.GetDiagnostics().Where(d => d.Severity >= DiagnosticSeverity.Warning).ToList();

    public IEnumerable<SyntaxTree> GeneratedTrees => RunResult.GeneratedTrees;

    public string GeneratedText => string.Join("\n", GeneratedTrees.Select(t => t.ToString()));
}

/// <summary>Compiles C# snippets against the net10 framework and Mux, and runs the generator on them.</summary>
internal static class GeneratorHarness
{
    public static readonly CSharpParseOptions ParseOptions = new(LanguageVersion.Latest);

    private static readonly Lazy<ImmutableArray<MetadataReference>> s_references = new(() =>
    {
        string trusted = (string)AppContext.GetData("TRUSTED_PLATFORM_ASSEMBLIES")!;
        return trusted.Split(Path.PathSeparator, StringSplitOptions.RemoveEmptyEntries)
            .Append(typeof(MuxClient).Assembly.Location)
            .Distinct(StringComparer.Ordinal)
            .Select(path => (MetadataReference)MetadataReference.CreateFromFile(path))
            .ToImmutableArray();
    });

    // Like a project with TreatWarningsAsErrors, Nullable enable, the newest warning wave and
    // AllowUnsafeBlocks (so a snippet can declare pointer parameters, which the generator must refuse).
    private static readonly CSharpCompilationOptions s_options = new CSharpCompilationOptions(OutputKind.DynamicallyLinkedLibrary)
        .WithNullableContextOptions(NullableContextOptions.Enable)
        .WithAllowUnsafe(true)
        .WithWarningLevel(9999)
        .WithSpecificDiagnosticOptions(new Dictionary<string, ReportDiagnostic>
        {
            // Assembly version unification notes the SDK also silences.
            ["CS1701"] = ReportDiagnostic.Suppress,
            ["CS1702"] = ReportDiagnostic.Suppress,
        });

    public static CSharpCompilation Compile(params string[] sources) => Compile("Snippet", [], sources);

    public static CSharpCompilation Compile(string assemblyName, IEnumerable<MetadataReference> references, params string[] sources) =>
        CSharpCompilation.Create(
            assemblyName,
            sources.Select((source, i) => CSharpSyntaxTree.ParseText(source, ParseOptions, path: $"{assemblyName}{i}.cs")),
            s_references.Value.AddRange(references),
            s_options);

    /// <summary>Compiles a snippet into an in-memory assembly that other snippets can reference.</summary>
    public static MetadataReference CompileToReference(string assemblyName, string source)
    {
        using var image = new MemoryStream();
        Microsoft.CodeAnalysis.Emit.EmitResult result = Compile(assemblyName, [], source).Emit(image);
        Assert.True(result.Success, string.Join("\n", result.Diagnostics));
        return MetadataReference.CreateFromImage(image.ToArray());
    }

    public static GeneratorRun Run(params string[] sources) => Run([], sources);

    public static GeneratorRun Run(IEnumerable<MetadataReference> references, params string[] sources)
    {
        CSharpCompilation input = Compile("Snippet", references, sources);
        List<Diagnostic> inputErrors = input.GetDiagnostics().Where(d => d.Severity == DiagnosticSeverity.Error).ToList();
        Assert.True(inputErrors.Count == 0, "The snippet itself does not compile:\n" + string.Join("\n", inputErrors));

        GeneratorDriver driver = CSharpGeneratorDriver.Create(
            [new MuxGenerator().AsSourceGenerator()],
            parseOptions: ParseOptions,
            driverOptions: new GeneratorDriverOptions(IncrementalGeneratorOutputKind.None, trackIncrementalGeneratorSteps: true));
        driver = driver.RunGeneratorsAndUpdateCompilation(input, out Compilation output, out ImmutableArray<Diagnostic> diagnostics);
        return new GeneratorRun(input, output, diagnostics, driver.GetRunResult(), driver);
    }

    /// <summary>The 1-based line of the first line of <paramref name="source"/> containing <paramref name="text"/>.</summary>
    public static int LineOf(string source, string text)
    {
        string[] lines = source.Split('\n');
        int index = Array.FindIndex(lines, line => line.Contains(text, StringComparison.Ordinal));
        Assert.True(index >= 0, $"'{text}' is not in the snippet.");
        return index + 1;
    }

    public static int Line(this Diagnostic diagnostic) => diagnostic.Location.GetLineSpan().StartLinePosition.Line + 1;

    /// <summary>The (id, name) of every method the generated dispatchers add, read from the generated source.</summary>
    public static List<(uint Id, string Name)> AddedMethods(GeneratorRun run)
    {
        var methods = new List<(uint Id, string Name)>();
        foreach (SyntaxTree tree in run.GeneratedTrees)
        {
            foreach (InvocationExpressionSyntax invocation in tree.GetRoot().DescendantNodes().OfType<InvocationExpressionSyntax>())
            {
                if (invocation.Expression is MemberAccessExpressionSyntax { Name.Identifier.ValueText: "AddMethod" })
                {
                    SeparatedSyntaxList<ArgumentSyntax> arguments = invocation.ArgumentList.Arguments;
                    methods.Add(((uint)((LiteralExpressionSyntax)arguments[0].Expression).Token.Value!,
                        (string)((LiteralExpressionSyntax)arguments[1].Expression).Token.Value!));
                }
            }
        }

        return methods;
    }
}
