using Microsoft.CodeAnalysis;

namespace Mux.Generators.Tests;

/// <summary>One test per diagnostic: its id, its severity, and the line it points at.</summary>
public sealed class DiagnosticTests
{
    private static Diagnostic AssertReports(string source, string id, DiagnosticSeverity severity, string lineText)
    {
        GeneratorRun run = GeneratorHarness.Run(source);
        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics, d => d.Id == id);
        Assert.Equal(severity, diagnostic.Severity);
        Assert.Equal(GeneratorHarness.LineOf(source, lineText), diagnostic.Line());
        Assert.True(diagnostic.Location.IsInSource);

        // Nothing else is reported, and a service with errors generates nothing that breaks the build.
        Assert.All(run.GeneratorDiagnostics, d => Assert.Equal(id, d.Id));
        Assert.DoesNotContain(run.OutputProblems, d => d.Severity == DiagnosticSeverity.Error);
        return diagnostic;
    }

    [Fact]
    public void MUX001_ReturnTypeThatIsNotATask()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IService
            {
                Task<int> Fine();

                int NotATask(int x);
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX001", DiagnosticSeverity.Error, "int NotATask(");
        Assert.Contains("must return Task, Task<T>, ValueTask or ValueTask<T>, or IAsyncEnumerable<T>", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("ref Task Fire();", "ref", "Task Fire(", "remove 'ref' to return it by value")]
    [InlineData("ref readonly Task<int> Get();", "ref readonly", "Task<int> Get(", "remove 'ref readonly' to return it by value")]
    [InlineData("ref int Count();", "ref", "int Count(", "remove 'ref' and change the return type")]
    public void MUX001_ReturnByReference_NamesTheReference(string method, string modifier, string lineText, string fix)
    {
        string source = $$"""
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IService
            {
                Task Fine();

                {{method}}
            }
            """;

        // A Task returned by reference has the right type: the 'ref' is what to remove.
        Diagnostic diagnostic = AssertReports(source, "MUX001", DiagnosticSeverity.Error, lineText);
        string message = diagnostic.GetMessage();
        Assert.Contains($"by reference ('{modifier}')", message, StringComparison.Ordinal);
        Assert.EndsWith(fix + ".", message, StringComparison.Ordinal);
    }

    [Fact]
    public void MUX001_VoidMethod()
    {
        const string source = """
            using Mux;

            [MuxService]
            public interface IService
            {
                void Fire();
            }
            """;

        AssertReports(source, "MUX001", DiagnosticSeverity.Error, "void Fire(");
    }

    [Fact]
    public void MUX001_MethodOfAnInheritedPlainInterface_NamesTheServiceAndTheInterface()
    {
        // Before: "Method 'GetEnumerator' of Mux service 'System.Collections.Generic.IEnumerable<int>'",
        // which is no Mux service and did not say where the method came from.
        const string source = """
            using System.Collections.Generic;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IStore : IEnumerable<int>
            {
                Task<int> Get(int id);
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Assert.Equal(2, run.GeneratorDiagnostics.Length);
        Assert.All(run.GeneratorDiagnostics, d => Assert.Equal("MUX001", d.Id));
        Assert.Contains(run.GeneratorDiagnostics, d => d.GetMessage().StartsWith(
            "Method 'System.Collections.Generic.IEnumerable<int>.GetEnumerator' of Mux service 'IStore' returns 'System.Collections.Generic.IEnumerator<int>'", StringComparison.Ordinal));
        Assert.Contains(run.GeneratorDiagnostics, d => d.GetMessage().StartsWith(
            "Method 'System.Collections.IEnumerable.GetEnumerator' of Mux service 'IStore'", StringComparison.Ordinal));
        Assert.Empty(run.GeneratedTrees);
    }

    [Fact]
    public void MUX002_RefOutOrInParameter()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IService
            {
                Task Fine(int a);

                Task<int> Swap(
                    ref int value);
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX002", DiagnosticSeverity.Error, "ref int value");
        Assert.Contains("remove the modifier", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX003_GenericMethod()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IService
            {
                Task<T> Get<T>(int id);
            }
            """;

        AssertReports(source, "MUX003", DiagnosticSeverity.Error, "Task<T> Get<T>(");
    }

    [Fact]
    public void MUX004_Property()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IService
            {
                Task Ping();

                int Count { get; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX004", DiagnosticSeverity.Error, "int Count");
        Assert.Contains("ValueTask<T> GetCount()", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX005_Event()
    {
        const string source = """
            using System;
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IService
            {
                Task Ping();

                event EventHandler Changed;
            }
            """;

        AssertReports(source, "MUX005", DiagnosticSeverity.Error, "event EventHandler Changed");
    }

    [Fact]
    public void MUX006_TwoMethodsWithTheSameId()
    {
        // FNV-1a 32 of "Coll.ICollide.M112789" and of "Coll.ICollide.M349192" are both 0x11bbf24b.
        Assert.Equal(MuxMethodId.Compute("Coll.ICollide.M112789"), MuxMethodId.Compute("Coll.ICollide.M349192"));
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Coll;

            [MuxService]
            public interface ICollide
            {
                Task M112789();

                Task M349192();
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX006", DiagnosticSeverity.Error, "Task M349192(");
        Assert.Contains("0x11bbf24b", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("Rename one of them", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX007_TwoCancellationTokens()
    {
        const string source = """
            using System.Threading;
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IService
            {
                Task Wait(CancellationToken first,
                    CancellationToken second);
            }
            """;

        AssertReports(source, "MUX007", DiagnosticSeverity.Error, "CancellationToken second");
    }

    [Fact]
    public void MUX008_GenericService()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            [MuxService]
            public interface IRepository<T>
            {
                Task<T> Get(int id);
            }
            """;

        AssertReports(source, "MUX008", DiagnosticSeverity.Error, "public interface IRepository<T>");
    }

    [Fact]
    public void MUX009_ObjectWithoutAUsableConstructor()
    {
        const string source = """
            using MessagePack;

            namespace Contracts;

            [MessagePackObject]
            public sealed class Point
            {
                public Point(string label) => Label2 = label;

                [Key(0)]
                public int X { get; set; }

                [Key(1)]
                public string Label2 { get; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX009", DiagnosticSeverity.Error, "public sealed class Point");
        Assert.Contains("public parameterless constructor", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX009_AbstractObject()
    {
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public abstract class Shape
            {
                [Key(0)]
                public int Sides { get; set; }
            }
            """;

        AssertReports(source, "MUX009", DiagnosticSeverity.Error, "public abstract class Shape");
    }

    [Fact]
    public void MUX010_ParameterTypeWithoutAFormatter_IsAWarning_AndTheCodeStillCompiles()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            namespace Contracts;

            public sealed class Unknown
            {
            }

            [MuxService]
            public interface IService
            {
                Task Send(int id,
                    Unknown payload);
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);
        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal("MUX010", diagnostic.Id);
        Assert.Equal(DiagnosticSeverity.Warning, diagnostic.Severity);
        Assert.Equal(GeneratorHarness.LineOf(source, "Unknown payload"), diagnostic.Line());
        Assert.Contains("mark it [MessagePackObject] and its members [Key(n)]", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("suppress MUX010", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("Contracts.Unknown", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Empty(run.OutputProblems);
        Assert.Single(GeneratorHarness.AddedMethods(run));
    }

    [Fact]
    public void MUX010_InsideACollectionOfAResult()
    {
        const string source = """
            using System.Collections.Generic;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IService
            {
                Task<List<System.IO.Stream>> All();
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX010", DiagnosticSeverity.Warning, "Task<List<System.IO.Stream>> All(");
        Assert.Contains("'System.IO.Stream'", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX010_MemberOfAnObject()
    {
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Holder
            {
                [Key(0)]
                public int Id { get; set; }

                [Key(1)]
                public System.IO.Stream? Data { get; set; }
            }
            """;

        AssertReports(source, "MUX010", DiagnosticSeverity.Warning, "public System.IO.Stream? Data");
    }

    [Fact]
    public void MUX011_PrivateNestedService()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            public sealed class Outer
            {
                [MuxService]
                private interface IHidden
                {
                    Task Ping();
                }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "private interface IHidden");
        Assert.Contains("make the interface public or internal", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_DuplicateKey()
    {
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Pair
            {
                [Key(0)]
                public int First { get; set; }

                [Key(0)]
                public int Second { get; set; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public int Second");
        Assert.Contains("both have [Key(0)]", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void GenericObject_IsLeftToMessagePackAtRunTime()
    {
        // A generic [MessagePackObject] has no closed type to generate for; MessagePack's dynamic
        // resolver handles it at run time (so not under Native AOT, which the README says).
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Box<T>
            {
                [Key(0)]
                public T? Value { get; set; }
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Assert.Empty(run.GeneratorDiagnostics);
        Assert.Empty(run.GeneratedTrees);
        Assert.Empty(run.OutputProblems);
    }

    [Fact]
    public void ObjectWithAMemberFormatter_IsLeftToMessagePackAtRunTime()
    {
        // Only MessagePack's DynamicObjectResolver honours [MessagePackFormatter] on a member; a
        // generated formatter would write the member with the resolver's formatter instead.
        const string source = """
            using MessagePack;
            using MessagePack.Formatters;

            public sealed class UpperFormatter : IMessagePackFormatter<string?>
            {
                public void Serialize(ref MessagePackWriter writer, string? value, MessagePackSerializerOptions options) => writer.Write(value?.ToUpperInvariant());

                public string? Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options) => reader.ReadString();
            }

            [MessagePackObject]
            public sealed class Label
            {
                [Key(0)]
                [MessagePackFormatter(typeof(UpperFormatter))]
                public string? Text { get; set; }

                [Key(1)]
                public int Size { get; set; }
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Assert.Empty(run.GeneratorDiagnostics);
        Assert.Empty(run.GeneratedTrees);
        Assert.Empty(run.OutputProblems);
    }

    [Fact]
    public void MUX011_PublicMemberWithoutAKey()
    {
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Order
            {
                [Key(0)]
                public int Id { get; set; }

                public string? Note { get; set; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public string? Note");
        Assert.Contains("add [Key(n)] to serialize it or [IgnoreMember] to leave it out", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_RequiredMemberThatIsNotSerialized()
    {
        // Before: MUX009, which asked for a parameterless constructor the type already had.
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Account
            {
                [Key(0)] public int Id { get; set; }

                [IgnoreMember]
                public required string Owner { get; set; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public required string Owner");
        Assert.Contains("required member 'Owner' is not serialized", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_MixedIntegerAndStringKeys()
    {
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Mixed
            {
                [Key(0)]
                public int Id { get; set; }

                [Key("name")]
                public string? Name { get; set; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public sealed class Mixed");
        Assert.Contains("mix integer and string keys", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_TwoUnionCasesWithTheSameKey()
    {
        const string source = """
            using MessagePack;

            [Union(0, typeof(Circle))]
            [Union(0, typeof(Square))]
            public interface IShape
            {
            }

            [MessagePackObject]
            public sealed class Circle : IShape
            {
                [Key(0)]
                public double Radius { get; set; }
            }

            [MessagePackObject]
            public sealed class Square : IShape
            {
                [Key(0)]
                public double Side { get; set; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public interface IShape");
        Assert.Contains("Two [Union] cases have the key 0", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("public sealed class Circle { }", "Circle")]
    [InlineData("[MessagePackObject] public sealed class Circle { [Key(0)] public double Radius { get; set; } }", "Circle")]
    [InlineData("public sealed class Circle<T> : IShape { }", "Circle<>")]
    public void MUX011_UnionCaseThatIsNotACaseOfTheUnion(string declaration, string typeOf)
    {
        // Before: the generated formatter cast the union to the case, CS0030 (or CS7003 for an
        // open generic type) in generated code.
        string source = $$"""
            using MessagePack;

            [Union(0, typeof({{typeOf}}))]
            public interface IShape
            {
            }

            {{declaration}}
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public interface IShape");
        Assert.Contains("does not implement or derive from", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_KeyWhoseArrayWouldBeTooLong()
    {
        // Before: the array's length, the largest key plus one, overflowed to a negative header.
        const string source = """
            using MessagePack;

            [MessagePackObject]
            public sealed class Sparse
            {
                [Key(0)] public int First { get; set; }

                [Key(int.MaxValue)]
                public int Last { get; set; }
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public int Last");
        Assert.Contains("[Key(2147483647)]", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_StaticAbstractMember()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IFactory
            {
                Task Ping();

                static abstract IFactory Create();
            }
            """;

        AssertReports(source, "MUX011", DiagnosticSeverity.Error, "static abstract IFactory Create(");
    }

    [Theory]
    [InlineData("protected")]
    [InlineData("private protected")]
    public void MUX011_MethodTheDispatcherCannotCall(string accessibility)
    {
        // Before: the generated dispatcher called it, CS0122 in generated code.
        string source = $$"""
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IStore
            {
                Task<int> Get(int id);

                {{accessibility}} Task Reset();
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "Task Reset(");
        Assert.Contains("make it public", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("System.IAsyncDisposable", "DisposeAsync")]
    [InlineData("System.IDisposable", "Dispose")]
    [InlineData("IOwnedResource", "DisposeAsync")]
    public void MUX011_DisposableService(string inherited, string method)
    {
        // Before: IAsyncDisposable's DisposeAsync became a remote call (the proxy sent it to the
        // server, whose dispatcher disposed the handler), and IDisposable's Dispose was MUX001.
        string source = $$"""
            using System.Threading.Tasks;
            using Mux;

            public interface IOwnedResource : System.IAsyncDisposable { }

            [MuxService]
            public interface IStore : {{inherited}}
            {
                Task<int> Get(int id);
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public interface IStore");
        string message = diagnostic.GetMessage();
        Assert.Contains(method, message, StringComparison.Ordinal);
        Assert.Contains("dispose the MuxClient", message, StringComparison.Ordinal);
        Assert.Empty(GeneratorHarness.Run(source).GeneratedTrees);
    }

    [Theory]
    [InlineData("Task Send(System.Span<byte> data);", "System.Span<byte>")]
    [InlineData("Task Send(scoped System.ReadOnlySpan<char> text);", "System.ReadOnlySpan<char>")]
    [InlineData("Task Send(params System.ReadOnlySpan<int> values);", "System.ReadOnlySpan<int>")]
    public void MUX011_RefStructParameter(string method, string type)
    {
        string source = $$"""
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface ISender
            {
                Task Ping();

                {{method}}
            }
            """;

        // The arguments are kept in a struct until they are written, which a ref struct cannot be in.
        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "Task Send(");
        Assert.Contains($"'{type}'", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("ref struct", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("unsafe Task Send(int* data);", "int*")]
    [InlineData("unsafe Task Send(delegate*<void> callback);", "delegate*<void>")]
    [InlineData("unsafe Task Send(byte*[] buffers);", "byte*[]")]
    [InlineData("unsafe Task Send(IAsyncEnumerable<int*[]> items);", "System.Collections.Generic.IAsyncEnumerable<int*[]>")]
    public void MUX011_PointerParameter(string method, string type)
    {
        string source = $$"""
            using System.Collections.Generic;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface ISender
            {
                Task Ping();

                {{method}}
            }
            """;

        // An address means nothing on the other machine, and generated code (no unsafe context)
        // could not even name the type.
        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "Task Send(");
        Assert.Contains($"'{type}'", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("pointer", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("[MuxService] public unsafe interface IS { Task<int*[]> Get(); }", "Task<int*[]> Get(", "int*[]")]
    [InlineData("[MuxService] public unsafe interface IS { IAsyncEnumerable<delegate*<int>[]> Get(); }", "IAsyncEnumerable<delegate*<int>[]> Get(", "delegate*<int>[]")]
    [InlineData("[MessagePackObject] public unsafe class O { [Key(0)] public int* P; } [MuxService] public interface IS { Task<O> Get(); }", "public int* P", "int*")]
    public void MUX011_PointerInAResultOrAMember(string declarations, string lineText, string type)
    {
        string source = "using System.Collections.Generic;\nusing System.Threading.Tasks;\nusing MessagePack;\nusing Mux;\n\n" + declarations;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, lineText);
        Assert.Contains($"'{type}'", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("pointer", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_VarargsMethod()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface ILogger
            {
                Task Log(string format, __arglist);
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "Task Log(");
        Assert.Contains("__arglist", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_MethodObsoleteAsAnError()
    {
        const string source = """
            using System;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IOld
            {
                [Obsolete("Use Next.", error: true)]
                Task Previous();

                [Obsolete("Use Next.")]
                Task Deprecated();

                Task Next();
            }
            """;

        // The dispatcher has to call the method, which C# refuses for an error; a warning is fine.
        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "Task Previous(");
        Assert.Contains("[Obsolete]", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MUX011_ServiceObsoleteAsAnError()
    {
        const string source = """
            using System;
            using System.Threading.Tasks;
            using Mux;

            [Obsolete("Use IOrders2.", true)]
            [MuxService]
            public interface IOrders
            {
                Task Place();
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "public interface IOrders");
        Assert.Contains("[Obsolete]", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("[MuxService] file interface IHidden { Task Ping(); }", "file interface IHidden")]
    [InlineData("file static class Holder { [MuxService] internal interface IHidden { Task Ping(); } }", "internal interface IHidden")]
    [InlineData("[MessagePackObject] file sealed class Hidden { [Key(0)] public int Value { get; set; } }", "file sealed class Hidden")]
    public void MUX011_FileLocalType(string declaration, string lineText)
    {
        // IsSymbolAccessibleWithin says yes for a file type, but the generated file is another file.
        string source = $$"""
            using System.Threading.Tasks;
            using MessagePack;
            using Mux;

            namespace Contracts;

            {{declaration}}
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, lineText);
        Assert.Contains("Generated code cannot see it", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("[Obsolete(\"Gone.\", true)] [MessagePackObject] public sealed class Old { [Key(0)] public int Value { get; set; } }", "public sealed class Old")]
    [InlineData("[MessagePackObject] public sealed class Old { [Key(0)] [Obsolete(\"Gone.\", true)] public int Value { get; set; } }", "public sealed class Old")]
    [InlineData("[MessagePackObject] public sealed class Old { [Obsolete(\"Gone.\", true)] public Old(int value) { } [Key(0)] public int Value { get; set; } }", "public sealed class Old")]
    public void ObjectObsoleteAsAnError_IsReported(string declaration, string lineText)
    {
        string source = $$"""
            using System;
            using MessagePack;

            namespace Contracts;

            {{declaration}}
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal(DiagnosticSeverity.Error, diagnostic.Severity);
        Assert.Equal(GeneratorHarness.LineOf(source, lineText), diagnostic.Line());
        Assert.DoesNotContain(run.OutputProblems, d => d.Severity == DiagnosticSeverity.Error);
    }

    [Theory]
    [InlineData("[MuxService] public interface IDynamic { Task Send(dynamic value); }")]
    [InlineData("[MessagePackObject] public sealed class Bag { [Key(0)] public dynamic? Value { get; set; } }")]
    public void MUX011_DynamicValue(string declaration)
    {
        string source = $$"""
            using System.Threading.Tasks;
            using MessagePack;
            using Mux;

            namespace Contracts;

            {{declaration}}
            """;

        // A generated formatter given a dynamic value binds its call at run time, which cannot pass a ref writer.
        Diagnostic diagnostic = AssertReports(source, "MUX011", DiagnosticSeverity.Error, "dynamic");
        Assert.Contains("object", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void DynamicResult_IsFormattedAsObject()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IDynamic
            {
                Task<dynamic> Get();
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Assert.Empty(run.GeneratorDiagnostics);
        Assert.Empty(run.OutputProblems);
    }

    [Fact]
    public void MUX006_OverloadsThatDifferOnlyInTheTokenOrContext_SayWhy()
    {
        const string source = """
            using System.Threading;
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface ICounter
            {
                Task Add(int amount);

                Task Add(int amount, CancellationToken cancellationToken);
            }
            """;

        Diagnostic diagnostic = AssertReports(source, "MUX006", DiagnosticSeverity.Error, "Task Add(int amount, CancellationToken");
        Assert.Contains("'ICounter.Add(int)' and 'ICounter.Add(int, System.Threading.CancellationToken)'", diagnostic.GetMessage(), StringComparison.Ordinal);
        Assert.Contains("CancellationToken and MuxCallContext parameters are not sent", diagnostic.GetMessage(), StringComparison.Ordinal);
    }

    [Fact]
    public void MethodsWithABody_AreNotCalls()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IWithHelper
            {
                Task<int> Get(int id);

                int Version => 1;

                async Task<int> GetTwice(int id) => await Get(id) + await Get(id);
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);

        Assert.Empty(run.GeneratorDiagnostics);
        Assert.Empty(run.OutputProblems);
        Assert.Equal("Get", Assert.Single(GeneratorHarness.AddedMethods(run)).Name);
    }

    [Fact]
    public void ErrorsInABaseService_AreReportedOnce()
    {
        const string source = """
            using System.Threading.Tasks;
            using Mux;

            [MuxService]
            public interface IBase
            {
                int Bad();
            }

            [MuxService]
            public interface IDerived : IBase
            {
                Task Fine();
            }
            """;

        GeneratorRun run = GeneratorHarness.Run(source);
        Diagnostic diagnostic = Assert.Single(run.GeneratorDiagnostics);
        Assert.Equal("MUX001", diagnostic.Id);
        Assert.Equal(GeneratorHarness.LineOf(source, "int Bad("), diagnostic.Line());
        Assert.Empty(run.GeneratedTrees);
    }
}
