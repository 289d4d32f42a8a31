using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using BenchmarkDotNet.Attributes;
using Mux.Connection;

namespace Mux.Benchmarks;

/// <summary>
/// The call table under its two real access patterns, with 1,024 calls in flight at most (see
/// <see cref="CallPipeline"/>): the production <see cref="CallTable{TCall}"/> (lock-free), a
/// <see cref="Dictionary{TKey, TValue}"/> under a <see cref="Lock"/> (<see cref="LockedCallTable{TCall}"/>) and a
/// <see cref="ConcurrentDictionary{TKey, TValue}"/>, each with one interlocked count.
/// </summary>
/// <remarks>
/// <see cref="TableCalls"/>, the caller role: <see cref="Threads"/> callers each add their call
/// under an id from per-core blocks (as OutgoingCalls numbers them), and one reader thread removes
/// each by id as its answer would, then reads the count as the drain check does after every answer.
/// <see cref="TableServe"/>, the serving role: one reader thread adds each call under the next id
/// (as Requests arrive) and looks up the call it added just before (a Cancel or a stream item for a
/// running call), and <see cref="Threads"/> handlers each remove their finished call by id and
/// object and read the count (the idle and drain check). One operation is one call; Mean is the
/// time per call, Allocated the bytes per call over all threads. Every add must succeed, every
/// lookup and remove must return the very call, the count must never read negative, and after
/// every invocation both the count and what the table holds must be exactly the calls left in
/// flight; a case that breaks any of these fails.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(CallStructureJobConfig))]
public class CallStructureTableBenchmarks
{
    private const int CallsPerInvoke = 64 * 1024; // divisible by every Threads value

    // The serving role's table size for the default call cap, 1,000: 2,048 slots (a client's pending table has more, for
    // the calls that wait for a slot).
    private const int ExpectedCalls = 1024;

    private WorkerThreads _threads = null!;
    private CallPipeline _pipeline = null!;
    private ICallStore _store = null!;
    private Action _drain = null!;
    private Action<BenchCall, bool> _checkCall = null!;

    public enum TableKind
    {
        /// <summary>The production <see cref="CallTable{TCall}"/>.</summary>
        CasSlots,

        /// <summary>A dictionary under a lock (<see cref="LockedCallTable{TCall}"/>).</summary>
        LockedDictionary,

        ConcurrentDictionary,
    }

    [Params(TableKind.CasSlots, TableKind.LockedDictionary, TableKind.ConcurrentDictionary)]
    public TableKind Table { get; set; }

    [Params(1, 2, 4, 8, 16, 64)]
    public int Threads { get; set; }

    [GlobalSetup(Target = nameof(TableCalls))]
    public void SetupCalls() => Setup(serve: false);

    [GlobalSetup(Target = nameof(TableServe))]
    public void SetupServe() => Setup(serve: true);

    [Benchmark(OperationsPerInvoke = CallsPerInvoke)]
    public void TableCalls() => RunAndCheck();

    [Benchmark(OperationsPerInvoke = CallsPerInvoke)]
    public void TableServe() => RunAndCheck();

    [GlobalCleanup]
    public void Cleanup()
    {
        _threads.Dispose();
        _drain();
        if (_store.Count != 0 || _store.Entries != 0)
        {
            throw new InvalidOperationException($"{Table}: {_store.Entries} calls left (count {_store.Count}) after every call was removed.");
        }
    }

    private void RunAndCheck()
    {
        _threads.Run();
        int count = _store.Count;
        if (count != _pipeline.InFlightBetweenInvocations)
        {
            throw new InvalidOperationException(
                $"{Table}: the count reads {count} after an invocation, with {_pipeline.InFlightBetweenInvocations} calls in flight.");
        }

        // Not only the count beside the table: what is in it. The calls in flight are in, the last
        // window of ended ones out, and nothing else (a few microseconds, against milliseconds for
        // the invocation). Here and not in GlobalCleanup, whose exceptions BenchmarkDotNet only logs.
        int entries = _store.Entries;
        if (entries != _pipeline.InFlightBetweenInvocations)
        {
            throw new InvalidOperationException(
                $"{Table}: {entries} calls in the table after an invocation, with {_pipeline.InFlightBetweenInvocations} in flight.");
        }

        _pipeline.ForEachCall(_checkCall);
    }

    private void CheckCall(BenchCall call, bool inFlight)
    {
        BenchCall? found = _store.Find(call.CallId);
        if (inFlight ? !ReferenceEquals(found, call) : found is not null)
        {
            throw new InvalidOperationException(inFlight
                ? $"{Table}: call {call.CallId}, in flight, is not in the table."
                : $"{Table}: call {call.CallId} is still in the table after it was removed.");
        }
    }

    private void Setup(bool serve)
    {
        switch (Table)
        {
            case TableKind.CasSlots:
                Setup(new CallTableStore(new CallTable<BenchCall>(ExpectedCalls), new StrongBox<int>()), serve);
                break;
            case TableKind.LockedDictionary:
                Setup(new LockedStore(new LockedCallTable<BenchCall>(ExpectedCalls), new StrongBox<int>()), serve);
                break;
            default:
                Setup(new ConcurrentStore(new ConcurrentCallDictionary(ExpectedCalls)), serve);
                break;
        }
    }

    private void Setup<TStore>(TStore store, bool serve)
        where TStore : struct, ICallStore
    {
        _store = store;
        _checkCall = CheckCall;
        _threads = new WorkerThreads(Threads + 1);
        _pipeline = new CallPipeline(Threads, CallsPerInvoke, _threads);
        CallPipeline pipeline = _pipeline;
        int many = Threads;
        if (serve)
        {
            var work = new ServeWork<TStore>(store, new ServeIds());
            pipeline.Prime(ref work);
            _drain = () => pipeline.Drain(ref work);
            _threads.Start(index =>
            {
                ServeWork<TStore> mine = work;
                if (index < many)
                {
                    pipeline.RunConsumer(index, ref mine);
                }
                else
                {
                    pipeline.RunAllProducer(ref mine);
                }
            });
        }
        else
        {
            var work = new CallsWork<TStore>(store, new CoreIdBlocks());
            pipeline.Prime(ref work);
            _drain = () => pipeline.Drain(ref work);
            _threads.Start(index =>
            {
                CallsWork<TStore> mine = work;
                if (index < many)
                {
                    pipeline.RunProducer(index, ref mine);
                }
                else
                {
                    pipeline.RunAllConsumer(ref mine);
                }
            });
        }
    }

    /// <summary>The caller role: a caller adds, the reader removes by id and reads the count.</summary>
    private readonly struct CallsWork<TStore>(TStore store, CoreIdBlocks ids) : IPipelineWork
        where TStore : struct, ICallStore
    {
        public void Produce(BenchCall call, BenchCall? previous)
        {
            call.CallId = ids.Next();
            if (!store.TryAdd(call))
            {
                throw new InvalidOperationException($"Adding call {call.CallId} failed, a fresh id.");
            }
        }

        public void Consume(BenchCall call)
        {
            if (!ReferenceEquals(store.TryRemove(call.CallId), call))
            {
                throw new InvalidOperationException($"Removing call {call.CallId} did not return it.");
            }

            if (store.Count < 0)
            {
                throw new InvalidOperationException("The count read negative.");
            }
        }
    }

    /// <summary>The serving role: the reader adds and looks up, a handler removes its call and
    /// reads the count.</summary>
    private readonly struct ServeWork<TStore>(TStore store, ServeIds ids) : IPipelineWork
        where TStore : struct, ICallStore
    {
        public void Produce(BenchCall call, BenchCall? previous)
        {
            call.CallId = ++ids.Last;
            if (!store.TryAdd(call))
            {
                throw new InvalidOperationException($"Adding call {call.CallId} failed, a fresh id.");
            }

            // The handler leaves its newest calls in (CallPipeline), so this one is still running.
            if (previous is not null && !ReferenceEquals(store.Find(previous.CallId), previous))
            {
                throw new InvalidOperationException($"Looking up running call {previous.CallId} did not find it.");
            }
        }

        public void Consume(BenchCall call)
        {
            if (!store.TryRemove(call.CallId, call))
            {
                throw new InvalidOperationException($"Removing running call {call.CallId} failed.");
            }

            if (store.Count < 0)
            {
                throw new InvalidOperationException("The count read negative.");
            }
        }
    }

    /// <summary>The peer's ids as Requests bring them: in sequence. Only the reader thread writes it.</summary>
    private sealed class ServeIds
    {
        public uint Last;
    }
}

/// <summary>The members of <see cref="CallTable{TCall}"/> the suite uses, for the other tables to
/// match. The stores are structs over their table used as type arguments, so the JIT compiles the
/// loops for each and calls the table directly, as the engine does.</summary>
internal interface ICallStore
{
    int Count { get; }

    /// <summary>The calls really in the table (not the count beside it); only at a quiet moment.</summary>
    int Entries { get; }

    bool TryAdd(BenchCall call);

    BenchCall? Find(uint callId);

    BenchCall? TryRemove(uint callId);

    bool TryRemove(uint callId, BenchCall expected);
}

/// <summary>The production table, as the engine uses it.</summary>
internal readonly struct CallTableStore(CallTable<BenchCall> table, StrongBox<int> entries) : ICallStore
{
    public int Count => table.Count;

    // A scan that selects nothing visits every call in the table, without the list Snapshot makes
    // (which MemoryDiagnoser would count against the table).
    public int Entries
    {
        get
        {
            entries.Value = 0;
            List<BenchCall>? none = null;
            table.RemoveWhere(entries, static (_, seen) => { seen.Value++; return false; }, ref none);
            return entries.Value;
        }
    }

    public bool TryAdd(BenchCall call) => table.TryAdd(call, out _);

    public BenchCall? Find(uint callId) => table.Find(callId);

    public BenchCall? TryRemove(uint callId) => table.TryRemove(callId);

    public bool TryRemove(uint callId, BenchCall expected) => table.TryRemove(callId, expected);
}

/// <summary>The dictionary under a lock, used the same way.</summary>
internal readonly struct LockedStore(LockedCallTable<BenchCall> table, StrongBox<int> entries) : ICallStore
{
    public int Count => table.Count;

    public int Entries
    {
        get
        {
            entries.Value = 0;
            List<BenchCall>? none = null;
            table.RemoveWhere(entries, static (_, seen) => { seen.Value++; return false; }, ref none);
            return entries.Value;
        }
    }

    public bool TryAdd(BenchCall call) => table.TryAdd(call, out _);

    public BenchCall? Find(uint callId) => table.Find(callId);

    public BenchCall? TryRemove(uint callId) => table.TryRemove(callId);

    public bool TryRemove(uint callId, BenchCall expected) => table.TryRemove(callId, expected);
}

internal readonly struct ConcurrentStore(ConcurrentCallDictionary table) : ICallStore
{
    public int Count => table.Count;

    public int Entries => table.Entries;

    public bool TryAdd(BenchCall call) => table.TryAdd(call);

    public BenchCall? Find(uint callId) => table.Find(callId);

    public BenchCall? TryRemove(uint callId) => table.TryRemove(callId);

    public bool TryRemove(uint callId, BenchCall expected) => table.TryRemove(callId, expected);
}

/// <summary>The lock-free library table: a <see cref="ConcurrentDictionary{TKey, TValue}"/> (whose
/// own Count takes every lock) with one interlocked count beside it, changed after the
/// add and after the remove.</summary>
internal sealed class ConcurrentCallDictionary(int expectedCalls)
{
    // The calls by id.
    private readonly ConcurrentDictionary<uint, BenchCall> _calls = new(Environment.ProcessorCount, expectedCalls);

    // _calls.Count, without taking its locks.
    private int _count;

    // Set by Close (never, in this suite); read per add as a closable table must.
    private volatile bool _closed;

    public int Count => Volatile.Read(ref _count);

    public void Close() => _closed = true;

    public int Entries => _calls.Count;

    public bool TryAdd(BenchCall call)
    {
        if (_closed || !_calls.TryAdd(call.CallId, call))
        {
            return false;
        }

        Interlocked.Increment(ref _count);
        return true;
    }

    public BenchCall? Find(uint callId) => _calls.GetValueOrDefault(callId);

    public BenchCall? TryRemove(uint callId)
    {
        if (!_calls.TryRemove(callId, out BenchCall? call))
        {
            return null;
        }

        Interlocked.Decrement(ref _count);
        return call;
    }

    public bool TryRemove(uint callId, BenchCall expected)
    {
        // Removes only if the value is this very call (BenchCall has reference equality).
        if (!_calls.TryRemove(KeyValuePair.Create(callId, expected)))
        {
            return false;
        }

        Interlocked.Decrement(ref _count);
        return true;
    }
}
