using System.Net;
using System.Threading.Tasks.Sources;
using Mux.Protocol;
using Mux.Tests.Protocol;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Server;

[MuxService]
public interface IHeldCallService
{
    ValueTask<int> Hold();
}

/// <summary>Stream items a client sends for a method that takes no stream: once its handler runs,
/// the server drops them as they come, rather than buffering a window of them until the call ends.</summary>
public class UnreadStreamTests
{
    [Fact]
    public async Task StreamItemsForARunningMethodThatTakesNoStream_AreDropped_NotCountedAgainstAWindowTheServerHolds()
    {
        var service = new HeldCallService();
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), StreamWindow = 4 });
        server.AddService<IHeldCallService>(service);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(server.LocalEndPoint!);
        Assert.Equal(4, (await raw.HandshakeAsync()).StreamWindow);

        await raw.SendAsync(WriteFrame(FrameType.Request, 1, MuxMethodId.Compute("Mux.Tests.Server.IHeldCallService.Hold"), new RawBody([0x90])));
        await service.Awaited.Task.WaitAsync(TestHost.Patience); // The handler has returned its pending result.

        // One more item than a stream of this server may hold: buffered as a stream, they would break its credit.
        for (int i = 0; i < 5; i++)
        {
            await raw.SendAsync(WriteRawFrame(FrameType.StreamItem, 1, [(byte)i]));
        }

        await raw.SendAsync(WriteRawFrame(FrameType.Ping, 0, [1, 2, 3, 4, 5, 6, 7, 8]));
        Assert.Equal(FrameType.Pong, (await raw.ExpectFrameAsync()).Type);
        service.Release(7);
        ReceivedFrame response = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Response, response.Type);
        Assert.Equal(1u, response.CallId);
        Assert.Equal(new byte[] { 0x07 }, response.Payload);
    }

    /// <summary>Hold's result, a source that says when the server awaits it: by then its handler
    /// has returned (ReturnAsync has the pending result).</summary>
    private sealed class HeldCallService : IHeldCallService, IValueTaskSource<int>
    {
        private ManualResetValueTaskSourceCore<int> _result = new() { RunContinuationsAsynchronously = true };

        public TaskCompletionSource Awaited { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public ValueTask<int> Hold() => new(this, _result.Version);

        public void Release(int value) => _result.SetResult(value);

        public int GetResult(short token) => _result.GetResult(token);

        public ValueTaskSourceStatus GetStatus(short token) => _result.GetStatus(token);

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        {
            _result.OnCompleted(continuation, state, token, flags);
            Awaited.TrySetResult();
        }
    }
}
