namespace Mux.Tests.Infrastructure;

/// <summary>Which transport a theory runs on: unit tests use in-memory pipes, integration tests loopback TCP.</summary>
public enum TransportKind
{
    InMemory,
    Tcp,
}

public static class Hosts
{
    public static Task<TestHost> StartAsync(TransportKind kind, MuxServerOptions? serverOptions = null, MuxClientOptions? clientOptions = null) =>
        kind == TransportKind.Tcp
            ? TestHost.StartTcpAsync(serverOptions, clientOptions)
            : TestHost.StartInMemoryAsync(serverOptions, clientOptions);

    /// <summary>Waits until <paramref name="condition"/> holds, failing the test after <see cref="TestHost.Patience"/>.</summary>
    public static async Task WaitUntilAsync(Func<bool> condition, string what)
    {
        DateTime deadline = DateTime.UtcNow + TestHost.Patience;
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, $"Timed out waiting until {what}.");
            await Task.Delay(10);
        }
    }

    /// <summary>
    /// Makes <paramref name="call"/> until it returns, on a client whose CallTimeout is short on
    /// purpose (a test of that timeout): a call that timed out by that CallTimeout, which a slow
    /// machine may cause, is made again. Any other failure fails the test at once, and so does no
    /// answer within <see cref="TestHost.Patience"/>: a connection that no longer answers still fails.
    /// </summary>
    public static async Task<T> AnswerDespiteAShortCallTimeoutAsync<T>(Func<Task<T>> call)
    {
        DateTime deadline = DateTime.UtcNow + TestHost.Patience;
        while (true)
        {
            try
            {
                return await call().WaitAsync(TestHost.Patience);
            }
            catch (TimeoutException ex) when (ex.Message.Contains("(MuxClientOptions.CallTimeout)", StringComparison.Ordinal) && DateTime.UtcNow < deadline)
            {
                // Timed out by the short CallTimeout, not by the test's patience: try again.
            }
        }
    }
}
