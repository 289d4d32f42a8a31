using System.IO.Pipelines;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Transport;

/// <summary>
/// A connection over a stream whose pending read does not end when the stream is disposed, but does
/// heed its cancellation token: the stream of a PipeReader (PipeReader.AsStream, which the server's
/// refusal of a pipe with TLS suggests) is one. Closing such a connection must not wait for ever.
/// </summary>
public sealed class StreamCloseTests
{
    /// <summary>The client here says nothing and never closes (a half-open peer). The stop used to
    /// hang: the close disposed the stream, and waited for a receive that only a token could end.</summary>
    [Fact]
    public async Task AStop_ClosesAConnectionOverAPipeReadersStream_WhoseReadDoesNotEndOnDispose()
    {
        var toServer = new Pipe();
        var toClient = new Pipe();
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new TestService());
        await server.AcceptAsync(new DuplexStream(toServer.Reader.AsStream(), toClient.Writer.AsStream()));

        await server.StopAsync().WaitAsync(TestHost.Patience);

        Assert.Equal(0, server.ActiveConnections);
        ReadResult end = await toClient.Reader.ReadAsync().AsTask().WaitAsync(TestHost.Patience);
        Assert.True(end.IsCompleted);
    }

    /// <summary>The write side: a client that stopped reading after the handshake, and a response
    /// too large for what is between them (a Pipe pauses its writer at 64 KiB). The close gives the
    /// send its grace period (5 s), then must end it: the stop used to wait for a write that the
    /// stream's disposal does not end.</summary>
    [Fact]
    public async Task AStop_ClosesAConnectionOverAPipeWritersStream_WhosePeerStoppedReading()
    {
        var toServer = new Pipe();
        var toClient = new Pipe();
        var clientInput = new Pipe();
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<ITestService>(new TestService());
        await server.AcceptAsync(new DuplexStream(toServer.Reader.AsStream(), toClient.Writer.AsStream()));
        Task<MuxClient> connecting = MuxClient.ConnectAsync(new PipePair(clientInput.Reader, toServer.Writer));

        // The HelloAck reaches the client; nothing after it does.
        ReadResult helloAck = await toClient.Reader.ReadAsync().AsTask().WaitAsync(TestHost.Patience);
        foreach (ReadOnlyMemory<byte> segment in helloAck.Buffer)
        {
            await clientInput.Writer.WriteAsync(segment);
        }

        toClient.Reader.AdvanceTo(helloAck.Buffer.End);
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        Task<byte[]> call = client.CreateProxy<ITestService>().Bytes(1024 * 1024);
        while (true)
        {
            // Left unread: once 64 KiB wait in the pipe, the server's write waits for room.
            ReadResult waiting = await toClient.Reader.ReadAsync().AsTask().WaitAsync(TestHost.Patience);
            toClient.Reader.AdvanceTo(waiting.Buffer.Start, waiting.Buffer.End);
            if (waiting.Buffer.Length >= 64 * 1024)
            {
                break;
            }
        }

        using var now = new CancellationTokenSource();
        await now.CancelAsync();
        await server.StopAsync(now.Token).WaitAsync(TestHost.Patience);

        Assert.Equal(0, server.ActiveConnections);
        await clientInput.Writer.CompleteAsync();
        await Assert.ThrowsAnyAsync<Exception>(() => call.WaitAsync(TestHost.Patience));
    }

    private sealed class PipePair(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
