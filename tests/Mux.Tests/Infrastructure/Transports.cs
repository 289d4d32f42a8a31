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
}
