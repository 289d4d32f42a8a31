using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// The token MuxServerOptions.Authenticate gets is cancelled when its connection closes, on the
/// thread that closes it (a stop, the handshake timeout's timer, the reader loop). What the
/// application registered on that token runs there; if it throws, the close must still finish,
/// and the stop with it.
/// </summary>
public sealed class AuthenticateTokenTests
{
    [Fact]
    public async Task ACallbackOnAuthenticatesTokenThatThrows_DoesNotFailTheStop()
    {
        var log = new CapturedLog();
        var registered = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var server = new MuxServer(new MuxServerOptions
        {
            LoggerFactory = log,
            Authenticate = async (info, cancellationToken) =>
            {
                cancellationToken.Register(() => throw new InvalidOperationException("The application's callback failed."));
                registered.TrySetResult();
                await Task.Delay(Timeout.Infinite, cancellationToken);
                return null;
            },
        });
        server.AddService<ITestService>(new TestService());
        Task<MuxClient> connect = server.ConnectInMemoryAsync();
        await registered.Task.WaitAsync(TestHost.Patience);

        await server.StopAsync().WaitAsync(TestHost.Patience);

        Assert.Equal(0, server.ActiveConnections);
        await Assert.ThrowsAsync<MuxConnectionException>(() => connect.WaitAsync(TestHost.Patience));
        Assert.Contains(log.Entries, entry => entry.EventId.Name == "AuthenticateFailed");
    }
}
