using Mux.Connection;
using Mux.Transport;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Connection;

/// <summary>What a user reads when something goes wrong: the method by its name, durations as a
/// person writes them, the fault that closed the connection; and the frame limit as the spec says.</summary>
public class ConnectionMessageTests
{
    // Echo(s) as a Request: 6 (type, flags, call id) + 4 (method id) + 4 (the deadline: the
    // client's default CallTimeout of 30 s) + 0x91 + 0xda nn nn + s.
    private const int EchoRequestOverhead = 6 + 4 + 4 + 1 + 3;

    [Fact]
    public async Task Request_WhoseLengthIsExactlyTheServersMaxFrameSize_IsSentAndAnswered()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { MaxFrameSize = 4096 });
        string text = new('x', 4096 - EchoRequestOverhead);

        Assert.Equal(text, await host.Proxy.Echo(text).WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task Request_OneByteOverTheServersMaxFrameSize_IsSentInFragmentsThatFit_AndArrivesWhole()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { MaxFrameSize = 4096 });
        string text = new('x', 4096 - EchoRequestOverhead + 1);

        Assert.Equal(text, await host.Proxy.Echo(text).WaitAsync(TestHost.Patience));
        Assert.True(host.Client.IsConnected);
    }

    [Fact]
    public async Task TimedOutCall_NamesTheMethodAndTheTimeoutReadably()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(clientOptions: new MuxClientOptions { CallTimeout = TimeSpan.FromMilliseconds(300) });

        var ex = await Assert.ThrowsAsync<TimeoutException>(() => host.Proxy.Hang(1).WaitAsync(TestHost.Patience));
        Assert.Equal("The Mux call to ITestService.Hang did not complete within 300 ms (MuxClientOptions.CallTimeout).", ex.Message);
    }

    [Fact]
    public async Task ALaterCloseWithoutAFault_KeepsTheFaultThatClosedTheConnection()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync();
        Task<int> pending = host.Proxy.Hang(1);
        await Hosts.WaitUntilAsync(() => host.Service.HangingCalls == 1, "the call to reach its handler");

        host.Client.Connection.Close(MuxCloseReason.TransportError, new IOException("the cable was cut"));
        host.Client.Connection.Close(MuxCloseReason.LocalShutdown, null);

        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => pending.WaitAsync(TestHost.Patience));
        Assert.EndsWith("failed: the cable was cut", failed.Message, StringComparison.Ordinal);
        var late = await Assert.ThrowsAsync<MuxConnectionException>(() => host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(MuxCloseReason.TransportError, late.Reason);
        Assert.EndsWith("failed: the cable was cut", late.Message, StringComparison.Ordinal);
        Assert.IsType<IOException>(late.InnerException);
    }

    [Theory]
    [InlineData(300, "300 ms")]
    [InlineData(1500, "1.5 s")]
    [InlineData(30_000, "30 s")]
    [InlineData(120_000, "2 min")]
    [InlineData(7_200_000, "2 h")]
    public void Durations_ReadAsAPersonWritesThem(int milliseconds, string expected) =>
        Assert.Equal(expected, DurationText.Format(TimeSpan.FromMilliseconds(milliseconds)));
}
