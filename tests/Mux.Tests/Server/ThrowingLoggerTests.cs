using Microsoft.Extensions.Logging;
using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>A user's logger that throws (Microsoft.Extensions.Logging's Logger rethrows its
/// providers' failures as one AggregateException) where a connection logs: on the thread pool
/// while it answers a failed call, and while it closes. The log line is lost; the call still gets
/// its answer, a closing connection still cancels its handlers, and the process does not crash.</summary>
public sealed class ThrowingLoggerTests
{
    private const int ConnectionClosedEvent = 1;
    private const int HandlerFailedEvent = 6;

    [Fact]
    public async Task AServerLoggerThatThrowsOnAFailedHandler_StillAnswersTheCall_AndTheConnectionServesOn()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { LoggerFactory = new ThrowingLog(HandlerFailedEvent) });

        MuxRemoteException failure = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Throw("boom").WaitAsync(TestHost.Patience));
        Assert.Equal(MuxStatusCode.HandlerFailed, failure.StatusCode);

        // The failed call gave its slot back and the connection still serves.
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        ServerConnection connection = host.Server.Connections.Single();
        await Hosts.WaitUntilAsync(() => connection.Incoming.Count == 0, "the failed call to finish on the server");
    }

    [Fact]
    public async Task AServerLoggerThatThrowsWhenAConnectionCloses_StillCancelsItsHandlers_AndTheConnectionCompletes()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { LoggerFactory = new ThrowingLog(ConnectionClosedEvent) });
        ServerConnection connection = host.Server.Connections.Single();
        Task waiting = host.Proxy.WaitForCancellation();
        await host.Service.WaitStarted.Task.WaitAsync(TestHost.Patience);

        await host.Client.DisposeAsync();
        await host.Service.CancellationObserved.Task.WaitAsync(TestHost.Patience);
        await connection.Completion.WaitAsync(TestHost.Patience);
        Assert.Equal(MuxCloseReason.RemoteClosed, connection.CloseReason);
        await Assert.ThrowsAsync<MuxConnectionException>(() => waiting.WaitAsync(TestHost.Patience));
    }

    /// <summary>Loggers that throw as Microsoft.Extensions.Logging's Logger does when a provider
    /// fails, for one event id; every other entry is dropped.</summary>
    private sealed class ThrowingLog(int eventId) : ILoggerFactory
    {
        public ILogger CreateLogger(string categoryName) => new Logger(eventId);

        public void AddProvider(ILoggerProvider provider)
        {
        }

        public void Dispose()
        {
        }

        private sealed class Logger(int eventId) : ILogger
        {
            public IDisposable? BeginScope<TState>(TState state)
                where TState : notnull => null;

            public bool IsEnabled(LogLevel logLevel) => true;

            public void Log<TState>(LogLevel logLevel, EventId id, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
            {
                if (id.Id == eventId)
                {
                    throw new AggregateException("An error occurred while writing to logger(s).", new InvalidOperationException("The log provider failed."));
                }
            }
        }
    }
}
