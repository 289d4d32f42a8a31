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
}
