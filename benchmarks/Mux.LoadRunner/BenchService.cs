using System.Collections.Concurrent;
using Mux.Samples.Contracts;

namespace Mux.LoadRunner;

/// <summary>
/// Serves <see cref="IBenchService"/> from prebuilt results, so the server measures the cost of the
/// RPC (framing, serialization, dispatch), not of building lists or arrays.
/// </summary>
internal sealed class BenchService : IBenchService
{
    private readonly ConcurrentDictionary<int, Task<List<User>>> _lists = new();
    private readonly ConcurrentDictionary<int, Task<byte[]>> _bytes = new();

    public BenchService()
    {
        // The sizes the runner calls are built before the first call; others on first use.
        _ = List(1);
        _ = List(100);
        _ = Bytes(1024);
    }

    public ValueTask<int> Add(int a, int b) => new(a + b);

    public Task<List<User>> List(int count) =>
        _lists.GetOrAdd(count, static n => Task.FromResult(BenchData.Users(n)));

    public Task<byte[]> Bytes(int size) =>
        _bytes.GetOrAdd(size, static n => Task.FromResult(BenchData.Bytes(n)));

    // The user's bad handler that --blocking-handler measures against: it holds the thread Mux
    // runs it on, with no await, for the whole time.
    public Task<int> Block(int milliseconds)
    {
        Thread.Sleep(milliseconds);
        return Task.FromResult(milliseconds);
    }
}

/// <summary>The payloads, built the same way on the server and (to size raw frames) in the orchestrator.</summary>
internal static class BenchData
{
    public static List<User> Users(int count) => SampleUsers.Create(count);

    public static byte[] Bytes(int size)
    {
        var bytes = new byte[size];
        for (int i = 0; i < bytes.Length; i++)
        {
            bytes[i] = (byte)i;
        }

        return bytes;
    }
}

/// <summary>Answers <see cref="IBenchControl"/> for a Mux benchmark server.</summary>
internal sealed class BenchControl(WindowMarks marks, Func<long> connectionsAccepted) : IBenchControl
{
    public Task<ServerStats> GetStats() => marks.GetStatsAsync(connectionsAccepted);
}
