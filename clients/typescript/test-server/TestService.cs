using System.Collections.Concurrent;
using System.Runtime.CompilerServices;

namespace Mux.TypeScriptTests;

/// <summary>The test services' behaviour. Cancellations are recorded per key so a later call can tell
/// the test whether a handler's token fired.</summary>
public sealed class TestService(Func<long> connectionsAccepted) : ITestService
{
    // Keyed by the test's key; completed with true when that call's token fired. Shared by every call.
    private static readonly ConcurrentDictionary<string, TaskCompletionSource<bool>> s_canceled = new();

    private static TaskCompletionSource<bool> Canceled(string key) =>
        s_canceled.GetOrAdd(key, _ => new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously));

    public ValueTask<int> Add(int a, int b) => ValueTask.FromResult(a + b);

    public Task<string> Echo(string text) => Task.FromResult(text);

    public Task<byte[]> EchoBytes(byte[] data) => Task.FromResult(data);

    public Task Fail(int code, string message) => throw new MuxRemoteException((MuxStatusCode)code, message);

    public Task Throw(string message) => throw new InvalidOperationException(message);

    public async Task<string> Hang(string key, CancellationToken cancellationToken)
    {
        Canceled("started:" + key).TrySetResult(true);
        using (cancellationToken.Register(static state => Canceled((string)state!).TrySetResult(true), key))
        {
            await Task.Delay(Timeout.Infinite, cancellationToken).ConfigureAwait(false);
        }

        return "not reached";
    }

    public async Task<bool> WasCanceled(string key, int waitMs)
    {
        Task<bool> canceled = Canceled(key).Task;
        return await Task.WhenAny(canceled, Task.Delay(waitMs)).ConfigureAwait(false) == canceled;
    }

    public Task<int> RemainingMs(MuxCallContext? context = null) =>
        Task.FromResult(context?.RemainingTime is { } left ? (int)left.TotalMilliseconds : -1);

    public Task<Dictionary<string, string>> Metadata(MuxCallContext? context = null) =>
        Task.FromResult(context!.Metadata.ToDictionary(pair => pair.Key, pair => pair.Value));

    public async IAsyncEnumerable<int> Range(int start, int count, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        for (int i = 0; i < count; i++)
        {
            cancellationToken.ThrowIfCancellationRequested();
            yield return start + i;
            await Task.Yield();
        }
    }

    public async IAsyncEnumerable<int> RangeThenFail(int count, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
            await Task.Yield();
        }

        throw new MuxRemoteException(MuxStatusCode.NotFound, $"nothing after {count}");
    }

    public async IAsyncEnumerable<int> Ticks(string key, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        using CancellationTokenRegistration registration = cancellationToken.Register(static state => Canceled((string)state!).TrySetResult(true), key);
        for (int i = 0; ; i++)
        {
            yield return i;
            await Task.Delay(5, cancellationToken).ConfigureAwait(false);
        }
    }

    public async Task<long> Sum(string label, IAsyncEnumerable<int> values, CancellationToken cancellationToken)
    {
        long sum = 0;
        await foreach (int value in values.WithCancellation(cancellationToken).ConfigureAwait(false))
        {
            sum += value;
        }

        return label == "negate" ? -sum : sum;
    }

    public async Task<string> Collect(string key, IAsyncEnumerable<string> values, CancellationToken cancellationToken)
    {
        var seen = new List<string>();
        try
        {
            await foreach (string value in values.WithCancellation(cancellationToken).ConfigureAwait(false))
            {
                seen.Add(value);
            }
        }
        catch (Exception e) when (e is MuxRemoteException or OperationCanceledException)
        {
            // The client's StreamEnd with its producer's error, or the Cancel that follows it, whichever lands first.
            Canceled(key).TrySetResult(true);
            throw;
        }

        return string.Join(",", seen);
    }

    public async IAsyncEnumerable<string> Shout(string prefix, IAsyncEnumerable<string> words, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        await foreach (string word in words.WithCancellation(cancellationToken).ConfigureAwait(false))
        {
            yield return prefix + word.ToUpperInvariant();
        }
    }

    public async Task<string> CallClient(string name, MuxCallContext? context = null) =>
        await context!.GetClientProxy<IClientSink>().Greet(name).ConfigureAwait(false);

    public async Task<string> CallClientAndCancel(int afterMs, MuxCallContext? context = null)
    {
        using var cancel = new CancellationTokenSource(afterMs);
        try
        {
            return "answered: " + await context!.GetClientProxy<IClientSink>().Wait(cancel.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return "canceled";
        }
    }

    public async Task<string> CallClientUnknown(MuxCallContext? context = null)
    {
        try
        {
            return "answered: " + await context!.GetClientProxy<IClientSink>().Missing().ConfigureAwait(false);
        }
        catch (MuxRemoteException e)
        {
            return $"{e.StatusCode}: {e.Message}";
        }
    }

    public Task<int> ProcessId() => Task.FromResult(Environment.ProcessId);

    public async Task<string> Slow(int ms)
    {
        await Task.Delay(ms).ConfigureAwait(false);
        return $"slept {ms}";
    }

    public Task<long> ConnectionsAccepted() => Task.FromResult(connectionsAccepted());

    public Task<string> WhoAmI(MuxCallContext? context = null) => Task.FromResult(context?.User.Identity?.Name ?? "");
}
