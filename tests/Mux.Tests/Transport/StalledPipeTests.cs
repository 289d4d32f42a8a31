using System.Buffers;
using System.IO.Pipelines;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Transport;

/// <summary>
/// A pipe handed to MuxServer.Accept whose peer stops reading: the server's flush waits for room
/// that never comes. Closing the connection must still complete the pipe's output, as documented
/// (over a socket, the close's grace period ends such a send); what was written stays in the pipe.
/// </summary>
public sealed class StalledPipeTests
{
    [Fact]
    public async Task APeerThatStopsReadingAPipe_StillGetsItsOutputCompletedWhenTheServerStops()
    {
        var toServer = new Pipe();
        var toClient = new Pipe(); // Pauses the server's flushes at 64 KiB unread.
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new TestService());
        server.Accept(new Ends(toServer.Reader, toClient.Writer));

        await toServer.Writer.WriteAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null)));
        await toServer.Writer.WriteAsync(RawMuxPeer.Request(1, "Bytes", ValueTuple.Create(1024 * 1024)));
        await Hosts.WaitUntilAsync(() => Unread(toClient.Reader).Length >= 64 * 1024, "the server to fill the pipe");

        using var outOfPatience = new CancellationTokenSource();
        await outOfPatience.CancelAsync();
        await server.StopAsync(outOfPatience.Token).WaitAsync(TestHost.Patience);

        await Hosts.WaitUntilAsync(() => Unread(toClient.Reader).IsCompleted, "the server to complete the pipe's output");
        Assert.True(Unread(toClient.Reader).Length >= 64 * 1024); // Nothing written was taken back.
        await server.DisposeAsync();
    }

    /// <summary>Looks at what the peer could read, without taking it (so the pipe stays full).</summary>
    private static (long Length, bool IsCompleted) Unread(PipeReader reader)
    {
        if (!reader.TryRead(out ReadResult result))
        {
            return (0, false);
        }

        (long, bool) seen = (result.Buffer.Length, result.IsCompleted);
        reader.AdvanceTo(result.Buffer.Start, result.Buffer.End);
        return seen;
    }

    private sealed class Ends(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
