namespace Mux.TypeScriptTests;

/// <summary>What the TypeScript client's tests call: one method per call shape and per behaviour they check.</summary>
[MuxService]
public interface ITestService
{
    ValueTask<int> Add(int a, int b);

    Task<string> Echo(string text);

    /// <summary>Returns the bytes it was given: large ones arrive and leave in fragments.</summary>
    Task<byte[]> EchoBytes(byte[] data);

    /// <summary>Fails with the given status code and message.</summary>
    Task Fail(int code, string message);

    /// <summary>Throws a plain exception: the client sees HandlerFailed.</summary>
    Task Throw(string message);

    /// <summary>Records that it started (under <c>started:key</c>), waits until the call's token fires, and records under <paramref name="key"/> that it did.</summary>
    Task<string> Hang(string key, CancellationToken cancellationToken);

    /// <summary>Whether the token of the call recorded under <paramref name="key"/> fired, waiting up to <paramref name="waitMs"/> for it.</summary>
    Task<bool> WasCanceled(string key, int waitMs);

    /// <summary>The deadline the server saw for this call, in ms left (-1 when the call carried none).</summary>
    Task<int> RemainingMs(MuxCallContext? context = null);

    /// <summary>The metadata the call carried.</summary>
    Task<Dictionary<string, string>> Metadata(MuxCallContext? context = null);

    /// <summary>A server stream of <paramref name="count"/> numbers from <paramref name="start"/>.</summary>
    IAsyncEnumerable<int> Range(int start, int count, CancellationToken cancellationToken);

    /// <summary>A server stream that yields <paramref name="count"/> numbers, then fails with NotFound.</summary>
    IAsyncEnumerable<int> RangeThenFail(int count, CancellationToken cancellationToken);

    /// <summary>An endless server stream; records under <paramref name="key"/> when its token fires.</summary>
    IAsyncEnumerable<int> Ticks(string key, CancellationToken cancellationToken);

    /// <summary>A client stream: the sum of the numbers sent.</summary>
    Task<long> Sum(string label, IAsyncEnumerable<int> values, CancellationToken cancellationToken);

    /// <summary>A client stream: its items joined; records under <paramref name="key"/> when the client's producer failed.</summary>
    Task<string> Collect(string key, IAsyncEnumerable<string> values, CancellationToken cancellationToken);

    /// <summary>Both ways: each word back with the prefix.</summary>
    IAsyncEnumerable<string> Shout(string prefix, IAsyncEnumerable<string> words, CancellationToken cancellationToken);

    /// <summary>Calls the caller's <see cref="IClientSink.Greet"/> and returns its answer.</summary>
    Task<string> CallClient(string name, MuxCallContext? context = null);

    /// <summary>Calls the caller's <see cref="IClientSink.Wait"/>, cancels it after <paramref name="afterMs"/>, and returns how it ended.</summary>
    Task<string> CallClientAndCancel(int afterMs, MuxCallContext? context = null);

    /// <summary>Calls a method the caller does not serve, and returns the error it got.</summary>
    Task<string> CallClientUnknown(MuxCallContext? context = null);

    /// <summary>This server process's id, to tell a restarted server from the first.</summary>
    Task<int> ProcessId();

    /// <summary>Answers after <paramref name="ms"/>: a call in flight across a GoAway.</summary>
    Task<string> Slow(int ms);

    /// <summary>How many connections the server has accepted.</summary>
    Task<long> ConnectionsAccepted();

    /// <summary>The name of the authenticated user of the connection (empty when anonymous).</summary>
    Task<string> WhoAmI(MuxCallContext? context = null);
}

/// <summary>What the TypeScript test clients serve to the server.</summary>
[MuxService]
public interface IClientSink
{
    ValueTask<string> Greet(string name);

    /// <summary>Waits until the server cancels; the client answers how it ended.</summary>
    ValueTask<string> Wait(CancellationToken cancellationToken);

    /// <summary>Not served by the TypeScript client: the server's call gets UnknownMethod.</summary>
    ValueTask<int> Missing();
}
