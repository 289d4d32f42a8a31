using Microsoft.CodeAnalysis;

namespace Mux.Generators.Tests;

/// <summary>IAsyncEnumerable&lt;T&gt; in a [MuxService]: accepted as a result and as a parameter
/// (no more MUX001), generated into streaming calls, and still refused in shapes Mux cannot carry.</summary>
public sealed class StreamingGeneratorTests
{
    private const string Streams = """
        using System.Collections.Generic;
        using System.Threading;
        using System.Threading.Tasks;
        using Mux;

        namespace Telemetry;

        [MuxService]
        public interface ISensors
        {
            IAsyncEnumerable<double> Readings(string sensor, CancellationToken cancellationToken);

            Task<long> Upload(IAsyncEnumerable<double> readings);

            ValueTask Store(string sensor, IAsyncEnumerable<double> readings, CancellationToken cancellationToken);

            IAsyncEnumerable<string> Chat(IAsyncEnumerable<string> lines);
        }
        """;

    [Fact]
    public void StreamResultsAndParameters_ReportNothing_AndCompile()
    {
        GeneratorRun run = GeneratorHarness.Run(Streams);

        Assert.Empty(run.GeneratorDiagnostics);
        Assert.Empty(run.OutputProblems);
    }

    [Fact]
    public void StreamingMethods_BecomeStreamingCalls_WithTheStreamLeftOutOfTheArguments()
    {
        GeneratorRun run = GeneratorHarness.Run(Streams);
        string text = Assert.Single(run.GeneratedTrees).ToString();

        Assert.Contains("this._invoker.InvokeServerStream<Arguments0, double>(", text, StringComparison.Ordinal);
        Assert.Contains("this._invoker.InvokeClientStreamAsync<Arguments1, double, long>(", text, StringComparison.Ordinal);
        Assert.Contains("this._invoker.InvokeClientStreamAsync<Arguments2, double>(", text, StringComparison.Ordinal);
        Assert.Contains("this._invoker.InvokeDuplexStream<Arguments3, string, string>(", text, StringComparison.Ordinal);
        Assert.Contains("call.ReturnStreamAsync<double>(", text, StringComparison.Ordinal);
        Assert.Contains("call.ReadStream<double>()", text, StringComparison.Ordinal);

        // Upload's argument list is empty: the stream travels as frames of the call, not in the Request.
        Assert.Contains("writer.WriteArrayHeader(0);", text, StringComparison.Ordinal);
    }

    [Fact]
    public void AMethodWithTwoStreamParameters_IsAnError()
    {
        const string source = """
            using System.Collections.Generic;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IMerger
            {
                Task<int> Merge(IAsyncEnumerable<int> left,
                    IAsyncEnumerable<int> right);
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal("MUX011", diagnostic.Id);
        Assert.Equal(DiagnosticSeverity.Error, diagnostic.Severity);
        Assert.Equal(GeneratorHarness.LineOf(source, "IAsyncEnumerable<int> right"), diagnostic.Line());
        Assert.Contains("at most one IAsyncEnumerable<T>", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void OtherEnumerableResults_AreStillMUX001()
    {
        const string source = """
            using System.Collections.Generic;
            using Mux;

            [MuxService]
            public interface IListing
            {
                IEnumerable<int> Numbers();
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal("MUX001", diagnostic.Id);
        Assert.Contains("or IAsyncEnumerable<T> to stream its results", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("Task<IAsyncEnumerable<int>> Numbers();")]
    [InlineData("ValueTask<IAsyncEnumerable<int>?> Numbers();")]
    public void AStreamInsideATask_IsMUX001(string method)
    {
        // It compiled, and every call then failed: MessagePack has no formatter for a stream.
        string source = $$"""
            using System.Collections.Generic;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IListing
            {
                {{method}}
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal("MUX001", diagnostic.Id);
        Assert.Equal(GeneratorHarness.LineOf(source, "Numbers()"), diagnostic.Line());
        Assert.Contains("or IAsyncEnumerable<T> to stream its results", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Empty(run.GeneratedTrees);
    }

    [Fact]
    public void AStreamInsideAnArgument_IsMUX010()
    {
        const string source = """
            using System.Collections.Generic;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IMerger
            {
                Task<int> Merge(List<IAsyncEnumerable<int>> sources);
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal("MUX010", diagnostic.Id);
        Assert.Contains("'System.Collections.Generic.IAsyncEnumerable<int>'", diagnostic.GetMessage(), StringComparison.Ordinal);
    }
}
