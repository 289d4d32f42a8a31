using System.Runtime.CompilerServices;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Streaming;

/// <summary>A client's producer that fails with a message longer than the server's frames take:
/// the StreamEnd that tells the server must still go, shortened, or the call waits forever for a
/// stream that will never end.</summary>
public sealed class LongStreamFailureTests
{
    private static readonly TimeSpan Patience = TestHost.Patience;

    [Fact]
    public async Task ClientProducerThatThrowsAMessageOverTheServersMaxFrameSize_StillFailsTheCall_AndTheHandlerSeesItsStart()
    {
        await using StreamingTests.Host host = await StreamingTests.Host.StartAsync(serverOptions: new MuxServerOptions { MaxFrameSize = 4096 });
        string message = "sensor unplugged: " + new string('x', 8000);

        var ex = await Assert.ThrowsAsync<InvalidOperationException>(() => host.Proxy.Drain(FailingAfter(3, message))).WaitAsync(Patience);

        Assert.Equal(message, ex.Message); // The client's caller gets its own exception, whole.
        Exception? seen = await host.Service.DrainEnded.Task.WaitAsync(Patience);
        var remote = Assert.IsType<MuxRemoteException>(seen);
        Assert.Contains("System.InvalidOperationException: sensor unplugged: xxx", remote.Message, StringComparison.Ordinal);
    }

    private static async IAsyncEnumerable<int> FailingAfter(int count, string message, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        for (int i = 0; i < count; i++)
        {
            yield return i;
        }

        await Task.Yield();
        throw new InvalidOperationException(message);
    }
}
