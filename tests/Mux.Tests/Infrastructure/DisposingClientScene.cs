using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;

namespace Mux.Tests.Infrastructure;

/// <summary>
/// A client connected to a raw server peer that answers its Hello and nothing else, on a clock that
/// never moves (so a dispose's drain waits for the peer until the test closes it): the scene of
/// the tests of what calls meet while their client's dispose waits for its server. Over one
/// endpoint, or balanced over a list that names only that one. Disposing the scene closes the peer,
/// then the client.
/// </summary>
internal sealed class DisposingClientScene : IAsyncDisposable
{
    private readonly TcpListener _listener;

    private DisposingClientScene(TcpListener listener, RawMuxPeer server, MuxClient client)
    {
        _listener = listener;
        Server = server;
        Client = client;
    }

    /// <summary>The server's side of the connection, as raw frames.</summary>
    public RawMuxPeer Server { get; }

    public MuxClient Client { get; }

    /// <param name="balanced">Whether the client names its server in EndPoints (a balanced client) rather than EndPoint.</param>
    /// <param name="maxConcurrentCalls">What the server's HelloAck allows.</param>
    /// <param name="autoReconnect">The client's <see cref="MuxClientOptions.AutoReconnect"/>.</param>
    public static async Task<DisposingClientScene> StartAsync(bool balanced, int maxConcurrentCalls = int.MaxValue, bool autoReconnect = true)
    {
        TcpListener listener = RawMuxPeer.Listen();
        RawMuxPeer? server = null;
        try
        {
            var options = new MuxClientOptions { TimeProvider = new FakeTimeProvider(), KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = autoReconnect };
            if (balanced)
            {
                options.EndPoints.Add(listener.LocalEndpoint);
            }
            else
            {
                options.EndPoint = listener.LocalEndpoint;
            }

            Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
            server = await RawMuxPeer.AcceptAsync(listener).WaitAsync(TestHost.Patience);
            await server.AnswerHelloAsync(maxConcurrentCalls);
            return new DisposingClientScene(listener, server, await connecting.WaitAsync(TestHost.Patience));
        }
        catch
        {
            server?.Dispose();
            listener.Dispose();
            throw;
        }
    }

    /// <summary>Asserts that <paramref name="call"/> fails as its client closed for good: not safe to
    /// retry (a caller that retries on that would retry on a client that sends nothing again).</summary>
    public static async Task<MuxConnectionException> AssertFailsAsClosedAsync(Task call)
    {
        MuxConnectionException failed = await Assert.ThrowsAsync<MuxConnectionException>(() => call.WaitAsync(TestHost.Patience));
        Assert.False(failed.IsSafeToRetry, failed.Message);
        Assert.Equal(MuxCloseReason.LocalShutdown, failed.Reason);
        Assert.EndsWith(" is closed.", failed.Message, StringComparison.Ordinal);
        return failed;
    }

    public async ValueTask DisposeAsync()
    {
        Server.Dispose();
        try
        {
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
        }
        finally
        {
            _listener.Dispose();
        }
    }
}
