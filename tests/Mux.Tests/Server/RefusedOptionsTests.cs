using System.Net;

namespace Mux.Tests.Server;

public sealed class RefusedOptionsTests
{
    /// <summary>
    /// The usual <c>await using</c> disposes a server whose StartAsync refused its options; the
    /// disposal must not throw an error of its own, or that error (an ArgumentOutOfRangeException
    /// about a CancellationTokenSource's delay) would replace the refusal that says how to fix the
    /// option. ShutdownTimeout and TimeProvider are the options a stop reads.
    /// </summary>
    [Theory]
    [InlineData(nameof(MuxServerOptions.ShutdownTimeout))]
    [InlineData(nameof(MuxServerOptions.TimeProvider))]
    public async Task AServerWhoseOptionsWereRefused_IsDisposedWithoutHidingTheRefusal(string option)
    {
        var options = new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) };
        if (option == nameof(MuxServerOptions.ShutdownTimeout))
        {
            options.ShutdownTimeout = TimeSpan.FromSeconds(-1);
        }
        else
        {
            options.TimeProvider = null!;
        }

        InvalidOperationException refused = await Assert.ThrowsAsync<InvalidOperationException>(async () =>
        {
            await using var server = new MuxServer(options);
            await server.StartAsync();
        });
        Assert.Contains($"MuxServerOptions.{option}", refused.Message, StringComparison.Ordinal);
    }
}
