using Mux.Protocol;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client;

/// <summary>
/// What the calls of a client that does not reconnect (AutoReconnect off) meet when its dispose runs
/// alongside them: as on a reconnecting client (<see cref="DisposingClientRaceTests"/>), once the
/// client is closing for good a call fails as closed, never as "not sent, safe to retry".
/// </summary>
public sealed class DisposingClientWithoutReconnectTests
{
    /// <summary>
    /// The server allows one call at a time: a second call, whether or not it waits for a
    /// connection, waits for the first one's slot, unsent, when the client is disposed. Such a
    /// client has no resend path to turn the close's "not sent, safe to retry" into its closed
    /// error: the call failed as the connection's close left it, and a caller retrying on that
    /// would retry on a client that sends nothing again.
    /// </summary>
    [Theory]
    [InlineData(false, false, false)]
    [InlineData(false, true, false)]
    [InlineData(true, false, false)]
    [InlineData(true, true, false)]
    [InlineData(false, false, true)]
    [InlineData(true, true, true)]
    public async Task ACallLeftUnsentByTheDisposesClose_FailsAsClosed_NotSafeToRetry(bool balanced, bool withResult, bool waitsForConnection)
    {
        await using DisposingClientScene scene = await DisposingClientScene.StartAsync(balanced, maxConcurrentCalls: 1, autoReconnect: false);
        ITestService proxy = scene.Client.CreateProxy<ITestService>(new MuxCallOptions { WaitForConnection = waitsForConnection });

        // The first call takes the one slot (the server never answers it); the second waits for it.
        Task<int> first = proxy.Add(1, 2).AsTask();
        Assert.Equal(FrameType.Request, (await scene.Server.ExpectFrameAsync()).Type);
        Task second = withResult ? proxy.Add(3, 4).AsTask() : proxy.Throw("never sent");
        Assert.False(second.IsCompleted);

        ValueTask dispose = scene.Client.DisposeAsync();
        await DisposingClientScene.AssertFailsAsClosedAsync(second);

        // The first call was sent: the close fails it as it fails any call in flight.
        MuxConnectionException inFlight = await Assert.ThrowsAsync<MuxConnectionException>(() => first.WaitAsync(TestHost.Patience));
        Assert.False(inFlight.IsSafeToRetry, inFlight.Message);

        // Nothing of the second call ever reached the server.
        while (await scene.Server.ReceiveFrameAsync().WaitAsync(TestHost.Patience) is { } frame)
        {
            Assert.NotEqual(FrameType.Request, frame.Type);
        }

        scene.Server.Dispose();
        await dispose.AsTask().WaitAsync(TestHost.Patience);
    }
}
