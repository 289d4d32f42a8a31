using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Tests.Client;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>A user's logger that throws on every entry (as Microsoft.Extensions.Logging's Logger
/// does when a provider fails), given to the server and the client themselves, not only to their
/// connections (ThrowingLoggerTests): the entries are lost, and the server still starts, accepts
/// and stops, and the client still connects and reconnects.</summary>
public sealed class ThrowingRuntimeLoggerTests
{
    [Fact]
    public async Task AServerWhoseLoggerAlwaysThrows_StartsAcceptsServesAndStops()
    {
        var probe = new ReconnectProbe();
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), LoggerFactory = new AlwaysThrowingLog() });
        server.AddService<IReconnectProbe>(probe);
        await using (server)
        {
            await server.StartAsync().WaitAsync(TestHost.Patience);
            await using MuxClient first = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
            await using MuxClient second = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);

            Assert.Equal(1, await first.CreateProxy<IReconnectProbe>().Serve(1).AsTask().WaitAsync(TestHost.Patience));
            Assert.Equal(2, await second.CreateProxy<IReconnectProbe>().Serve(2).AsTask().WaitAsync(TestHost.Patience));
            Assert.Equal(2, server.ActiveConnections);

            await server.StopAsync(new CancellationTokenSource(TestHost.Patience).Token).WaitAsync(TestHost.Patience);
            Assert.Equal(0, server.ActiveConnections);
        }
    }

    [Fact]
    public async Task AClientWhoseLoggerAlwaysThrows_ConnectsAndReconnectsToARestartedServer()
    {
        var firstProbe = new ReconnectProbe();
        var first = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        first.AddService<IReconnectProbe>(firstProbe);
        await first.StartAsync().WaitAsync(TestHost.Patience);
        var endPoint = (IPEndPoint)first.LocalEndPoint!;
        var options = new MuxClientOptions
        {
            ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
            ReconnectMaxDelay = TimeSpan.FromMilliseconds(200),
            CallTimeout = TestHost.Patience,
            LoggerFactory = new AlwaysThrowingLog(),
        };

        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, options).WaitAsync(TestHost.Patience);
        IReconnectProbe proxy = client.CreateProxy<IReconnectProbe>();
        Assert.Equal(1, await proxy.Serve(1).AsTask().WaitAsync(TestHost.Patience));

        await first.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        await Hosts.WaitUntilAsync(() => client.State == MuxClientState.Reconnecting, "the client to see its connection lost");

        var secondProbe = new ReconnectProbe();
        var second = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
        second.AddService<IReconnectProbe>(secondProbe);
        await using (second)
        {
            await second.StartAsync().WaitAsync(TestHost.Patience);
            Assert.Equal(2, await proxy.Serve(2).AsTask().WaitAsync(TestHost.Patience));
            Assert.Equal(1, secondProbe.Served);

            // Awaited, not read at once: the keeper publishes the new connection to the waiting call
            // before it reports Connected (and logs the reconnect, which throws here, in between).
            await Hosts.WaitUntilAsync(() => client.State == MuxClientState.Connected, "the client reports itself connected");
        }
    }

    /// <summary>Loggers that throw on every entry, as Microsoft.Extensions.Logging's Logger does when
    /// its provider fails.</summary>
    private sealed class AlwaysThrowingLog : ILoggerFactory
    {
        public ILogger CreateLogger(string categoryName) => new Logger();

        public void AddProvider(ILoggerProvider provider)
        {
        }

        public void Dispose()
        {
        }

        private sealed class Logger : ILogger
        {
            public IDisposable? BeginScope<TState>(TState state)
                where TState : notnull => null;

            public bool IsEnabled(LogLevel logLevel) => true;

            public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
                throw new AggregateException("An error occurred while writing to logger(s).", new InvalidOperationException("The log provider failed."));
        }
    }
}
