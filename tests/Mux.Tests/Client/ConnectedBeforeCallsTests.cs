using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;

namespace Mux.Tests.Client;

/// <summary>
/// A client is Connected before the connection it has just made reaches any call: a caller whose
/// call succeeded on it never finds the client still Connecting or Reconnecting. Before, the keeper
/// handed the connection to calls, logged, and only then moved to Connected (and a client over
/// several instances after that); the test holds the client's loop in that log line (a logger that
/// waits until the test has looked), and makes its call there, so the window is there every time.
/// </summary>
public sealed class ConnectedBeforeCallsTests
{
    [Theory]
    [InlineData(false, false)]
    [InlineData(false, true)]
    [InlineData(true, false)]
    [InlineData(true, true)]
    public async Task ACallThatSucceededOnANewConnection_FindsTheClientConnected(bool balanced, bool reconnect)
    {
        using TcpListener listener = RawMuxPeer.Listen();
        using var looked = new ManualResetEventSlim();
        var log = new HoldingLog(reconnect ? "Reconnected" : "Connected", looked);
        var options = new MuxClientOptions
        {
            LoggerFactory = log,
            KeepAliveInterval = Timeout.InfiniteTimeSpan,
        };
        if (balanced)
        {
            options.EndPoints.Add(listener.LocalEndpoint);
        }
        else
        {
            options.EndPoint = listener.LocalEndpoint;
        }

        var reconnecting = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        MuxClient client = MuxClient.Create(options);
        client.StateChanged += (_, change) =>
        {
            if (change.State == MuxClientState.Reconnecting)
            {
                reconnecting.TrySetResult();
            }
        };
        try
        {
            if (reconnect)
            {
                // A first connection, lost: the client reconnects to the server that takes the call.
                await using (RawMuxPeer first = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience))
                {
                    await first.AnswerHelloAsync();
                }

                await reconnecting.Task.WaitAsync(TestHost.Patience);
            }

            await using (RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience))
            {
                // The connection is up and the client's loop is held in its log line: the call goes to it.
                await server.AnswerHelloAsync();
                await log.Holding.WaitAsync(TestHost.Patience);
                Task<int> call = client.CreateProxy<ITestService>().Add(1, 2).AsTask();
                ReceivedFrame request = await server.ExpectFrameAsync();
                await server.SendAsync(Response(request.CallId, 3));
                Assert.Equal(3, await call.WaitAsync(TestHost.Patience));
                MuxClientState seen = client.State;
                looked.Set();
                Assert.Equal(MuxClientState.Connected, seen);
            }
        }
        finally
        {
            looked.Set();
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
    }

    /// <summary>Holds whoever logs <paramref name="eventName"/> until <paramref name="release"/> is
    /// set (within the test's patience).</summary>
    private sealed class HoldingLog(string eventName, ManualResetEventSlim release) : LogHook
    {
        private readonly TaskCompletionSource _holding = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Completes when the event has been logged, and is being held.</summary>
        public Task Holding => _holding.Task;

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Name == eventName)
            {
                _holding.TrySetResult();
                release.Wait(TestHost.Patience);
            }
        }
    }
}
