namespace Mux.Generators.Tests;

/// <summary>
/// Contract shapes a user may write that are easy to get wrong in generated code: names that
/// collide with generated ones or keywords, inherited and hidden methods, default values, tuples,
/// sparse keys, unions, streams of unusual items. Each must compile cleanly.
/// </summary>
public sealed class UnusualShapeTests
{
    public static TheoryData<string, string> Shapes => new()
    {
        { "argsname", "[MuxService] public interface IS { Task<int> Get(int Arguments0, int ServiceProxy, int global, int call, int service, int arguments, int @this); }" },
        { "internalmember", "[MuxService] public interface IS { internal Task<int> Get(); }" },
        { "samenames", "public interface IA { Task<int> Get(int a); } public interface IB { Task<int> Get(int a); } [MuxService] public interface IS : IA, IB { }" },
        { "newhides", "[MuxService] public interface IBase { Task<int> Get(); } [MuxService] public interface IS : IBase { new Task<int> Get(); }" },
        { "defaults", "public enum E { A, B } [MuxService] public interface IS { Task<int> Get(E e = E.B, string s = \"a\\\"b\", decimal d = 1.5m, string? n = null, int? i = 3, CancellationToken ct = default); }" },
        { "tuplenames", "[MuxService] public interface IS { Task<(int call, string service)> Get((int a, string b) x); }" },
        { "paramscollection", "[MuxService] public interface IS { Task<int> Get(params List<int> x); }" },
        { "paramsienum", "[MuxService] public interface IS { Task<int> Get(params IEnumerable<int> x); }" },
        { "keywordmethod", "[MuxService] public interface IS { Task<int> @class(int @int); }" },
        { "nestedininterface", "public interface IOuter { [MuxService] public interface IS { Task<int> Get(); } }" },
        { "reabstract", "[MuxService] public interface IBase { Task<int> Get(); } [MuxService] public interface IS : IBase { abstract Task<int> IBase.Get(); }" },
        { "dimoverride", "[MuxService] public interface IBase { Task<int> Get(); } [MuxService] public interface IS : IBase { Task<int> IBase.Get() => Task.FromResult(1); }" },
        { "mpobj_members_like_locals", "[MessagePackObject] public class O { [Key(0)] public int count { get; set; } [Key(1)] public int result { get; set; } [Key(2)] public int formatters { get; set; } [Key(3)] public int i; [Key(4)] public int reader; [Key(5)] public int options; [Key(6)] public int v0; [Key(7)] public int has0; [Key(8)] public int value; } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mpobj_ctor_defaults", "public enum E { A, B } [MessagePackObject] public class O { public O(int a, E e = E.B, string s = \"q\\\"\\\\\", decimal d = -1.5m, double x = double.NaN, char c = '\\'', float f = 0.1f, long l = long.MinValue, uint u = uint.MaxValue, string? n = null, int? ni = 5, E? ne = E.A) { A = a; E = e; S = s; D = d; X = x; C = c; F = f; L = l; U = u; N = n; Ni = ni; Ne = ne; } [Key(0)] public int A { get; } [Key(1)] public E E { get; } [Key(2)] public string S { get; } [Key(3)] public decimal D { get; } [Key(4)] public double X { get; } [Key(5)] public char C { get; } [Key(6)] public float F { get; } [Key(7)] public long L { get; } [Key(8)] public uint U { get; } [Key(9)] public string? N { get; } [Key(10)] public int? Ni { get; } [Key(11)] public E? Ne { get; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mpobj_init_struct", "[MessagePackObject] public struct O { [Key(0)] public int A { get; init; } [Key(1)] public required string B { get; init; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mpobj_keyword_type", "namespace @class { [MessagePackObject] public class @struct { [Key(0)] public int @int { get; set; } } [MuxService] public interface @interface { Task<@struct> @return(@struct @in); } }" },
        { "mpobj_hidden_member", "[MessagePackObject] public class B { [Key(0)] public int A { get; set; } } [MessagePackObject] public class O : B { [Key(1)] public new string? A { get; set; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mpobj_record_ctor_and_init", "[MessagePackObject] public record O([property: Key(0)] int A) { [Key(1)] public string? B { get; init; } [Key(2)] public int C { get; init; } = 5; } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mpobj_nested_private_setter", "[MessagePackObject] public class O { [Key(0)] public int A { get; private set; } [Key(1)] public int B { get; protected set; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mpobj_field_readonly_struct", "[MessagePackObject] public readonly record struct O([property: Key(0)] int A, [property: Key(1)] string B); [MuxService] public interface IS { Task<O?> Get(O? o); }" },
        { "mpobj_union", "[Union(0, typeof(A))] [Union(1, typeof(B))] public abstract class U {} [MessagePackObject] public sealed class A : U { [Key(0)] public int X { get; set; } } [MessagePackObject] public sealed class B : U { } [MuxService] public interface IS { Task<U> Get(U u); }" },
        { "mpobj_union_interface", "[Union(0, typeof(A))] public interface U {} [MessagePackObject] public sealed class A : U { [Key(0)] public int X { get; set; } } [MuxService] public interface IS { Task<U> Get(U u); }" },
        { "nullable_struct_array", "public enum E { A } [MuxService] public interface IS { Task<E?[]?> Get(int?[] a, List<E?>? b, Dictionary<string, E?[]> c); }" },
        { "jagged", "[MuxService] public interface IS { Task<int[][]> Get(int[,] a); }" },
        { "task_object", "[MuxService] public interface IS { Task<object?> Get(object? o, object[] p); }" },
        { "nint", "[MuxService] public interface IS { Task<nint> Get(nuint a, System.IntPtr b); }" },
        { "valuetuple_of_mp", "[MessagePackObject] public class O { [Key(0)] public int A { get; set; } } [MuxService] public interface IS { Task<(O, int)> Get(KeyValuePair<string, O> kv); }" },
        { "record_readonly_ctor_protected", "[MessagePackObject] public class O { protected O() {} public O(int a) { A = a; } [Key(0)] public int A { get; set; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "overload_generic_base", "public interface IRepo<T> { Task Put(T item); Task Put(int id); } [MuxService] public interface IS : IRepo<string> { }" },
        { "same_id_overloaded_token", "[MuxService] public interface IS { Task Put(int a); Task Put(long a); }" },
        { "static_nonabstract", "[MuxService] public interface IS { Task Put(int a); static int Helper() => 1; static virtual int V() => 1; }" },
        { "static_virtual_generic_self", "[MuxService] public interface IS { Task Put(int a); static virtual Task<int> Q() => Task.FromResult(1); }" },
        { "sealed_dim", "[MuxService] public interface IS { Task Put(int a); sealed Task Put2() => Task.CompletedTask; }" },
        { "nested_in_class_keyword", "public static class @event { [MuxService] public interface @if { Task @else(); } }" },
        { "conflict_type_named_task", "namespace N { public class Task {} [MuxService] public interface IS { System.Threading.Tasks.Task<int> Get(); } }" },
        { "type_named_Mux", "namespace N { public class Mux {} public class MessagePack {} public class System {} [MuxService] public interface IS { global::System.Threading.Tasks.Task<int> Get(global::System.Collections.Generic.List<int> a); } }" },
        { "callcontext_nullable_token_order", "[MuxService] public interface IS { Task<int> Get(CancellationToken ct, int a, MuxCallContext? c = null); }" },
        { "return_task_of_callcontext", "[MuxService] public interface IS { Task<CancellationToken> Get(); }" },
        { "param_task", "[MuxService] public interface IS { Task<int> Get(Task<int> t); }" },
        { "delegate_param", "[MuxService] public interface IS { Task<int> Get(Func<int> f); }" },
        { "stream_named_items", "[MuxService] public interface IS { IAsyncEnumerable<int> Get(IAsyncEnumerable<int> items, int call, CancellationToken token); }" },
        { "stream_of_nullable_struct", "public enum E { A } [MuxService] public interface IS { IAsyncEnumerable<E?> Get(IAsyncEnumerable<E?> items); }" },
        { "stream_of_tuples", "[MuxService] public interface IS { IAsyncEnumerable<(int a, string? b)> Get(IAsyncEnumerable<(int x, int y)> items); }" },
        { "bigkey2", "[MessagePackObject] public class O { [Key(0)] public int A { get; set; } [Key(200000)] public int B { get; set; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "union_struct_case", "[Union(0, typeof(A))] public interface IU {} [MessagePackObject] public struct A : IU { [Key(0)] public int X; } [MuxService] public interface IS { Task<IU> Get(); }" },
        { "union_self", "[Union(0, typeof(U))] public abstract class U {} [MuxService] public interface IS { Task<U> Get(); }" },
        { "surrogate_key", "[MessagePackObject] public class O { [Key(\"\\ud800\")] public int A { get; set; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "object_names", "[MuxService] public interface IS { Task<string> ToString(); Task<bool> Equals(int other); Task<int> GetHashCode(); Task<int> GetType(int x); Task MemberwiseClone(); }" },
        { "nested_stream", "[MuxService] public interface IS { IAsyncEnumerable<IAsyncEnumerable<int>> Get(); }" },
        { "stream_of_stream_param", "[MuxService] public interface IS { Task Put(IAsyncEnumerable<IAsyncEnumerable<int>> x); }" },
        { "service_named_like_generated", "[MuxService] public interface ServiceProxy { Task<int> Get(); } [MuxService] public interface ServiceDispatcher { Task<int> Get(); } [MuxService] public interface Arguments0 { Task<int> Get(Arguments0 a); }" },
        { "mp_named_like_generated", "[MessagePackObject] public class ObjectFormatter { [Key(0)] public int A; } [MessagePackObject] public class MemberFormatters { [Key(0)] public ObjectFormatter? A; } [MuxService] public interface IS { Task<MemberFormatters> Get(ObjectFormatter o); }" },
        { "ns_mux_generated", "namespace Mux.Generated { [MuxService] public interface IS { Task<int> Get(); } public class ServiceProxy {} public class Arguments0 {} }" },
        { "mp_in_ctor", "[MessagePackObject] public readonly struct O { public O(in int a, in string b) { A = a; B = b; } [Key(0)] public int A { get; } [Key(1)] public string B { get; } } [MuxService] public interface IS { Task<O> Get(); }" },
        { "mp_generic_nested_enum", "public class Outer<T> { public enum E { A } } [MuxService] public interface IS { Task<Outer<int>.E> Get(Outer<string>.E e); }" },
        { "long_tuple", "[MuxService] public interface IS { Task<(int, int, int, int, int, int, int, int, string)> Get((int a, int b, int c, int d, int e, int f, int g, int h, int i) t); }" },
        { "valuetask_stream", "[MuxService] public interface IS { ValueTask<int> Get(IAsyncEnumerable<string?>? items, CancellationToken ct = default); }" },
    };

    [Theory]
    [MemberData(nameof(Shapes))]
    public void UnusualShape_CompilesWithoutErrorsOrWarnings(string name, string declarations)
    {
        string source = "using System; using System.Collections.Generic; using System.Threading; using System.Threading.Tasks; using MessagePack; using Mux;\n" + declarations;

        GeneratorRun run = GeneratorHarness.Run(source);

        // MUX010 (a type MessagePack may not format) is a warning the shape may rightly get.
        Assert.All(run.GeneratorDiagnostics, d => Assert.Equal("MUX010", d.Id));
        Assert.True(run.OutputProblems.Count == 0, name + ":\n" + string.Join("\n", run.OutputProblems));
        Assert.NotEmpty(run.GeneratedTrees);
    }
}
