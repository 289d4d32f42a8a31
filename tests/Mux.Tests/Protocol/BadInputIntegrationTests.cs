using System.Buffers.Binary;
using System.Net;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Tests.Infrastructure;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Protocol;

public class BadInputIntegrationTests
{
    private static readonly byte[] s_pingPayload = [0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04];

    [Fact]
    public async Task RawSocketSendingAnOversizedLength_IsDisconnected_WhileAMuxClientOnTheSameServerKeepsWorking()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Server.ActiveConnections);

        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 2, "the server to register the raw connection");

        await raw.SendAsync([0xff, 0xff, 0xff, 0xff]);

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
        Assert.True(host.Client.IsConnected);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task RawSocketSendingRandomGarbage_IsDisconnected_WhileAMuxClientKeepsWorking()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 2, "the server to register the raw connection");

        // A plausible length, then a type byte that does not exist.
        await raw.SendAsync([0x0a, 0x00, 0x00, 0x00, 0xee, 0x00, 0x01, 0x00, 0x00, 0x00, 1, 2, 3, 4]);

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData((ushort)1)] // An older peer: version 1 had no deadline header and no streams.
    [InlineData((ushort)3)] // A newer one.
    public async Task RawSocketSendingAHelloWithAnotherVersion_GetsAProtocolErrorNamingBothVersionsAndIsClosed(ushort version)
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);

        await raw.SendAsync(WriteHelloFrame(FrameType.Hello, new HandshakeSettings(version, 4096, 10, null)));

        ReceivedFrame reply = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Error, reply.Type);
        Assert.Equal(0u, reply.CallId);
        ErrorBody error = ErrorBody.Read(reply.Payload);
        Assert.Equal(MuxStatusCode.ProtocolError, error.Code);
        Assert.Equal(7, (int)error.Code);
        Assert.Contains($"the client asked for version {version}", error.Message, StringComparison.Ordinal);
        Assert.Contains("This server speaks Mux protocol version 2", error.Message, StringComparison.Ordinal);
        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
    }

    [Fact]
    public async Task RawSocketWhoseFirstFrameIsARequest_IsClosedWithoutAnAnswer()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);

        await raw.SendAsync(WriteFrame(FrameType.Request, 1, TestServiceIds.Add, new RawBody([0x92, 0x02, 0x03])));

        await raw.AssertClosedByOtherSideAsync();
        Assert.Empty(raw.Unread);
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task RawSocketWithTheWrongMagic_IsClosed()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        byte[] hello = WriteHelloFrame(FrameType.Hello, new HandshakeSettings(ProtocolConstants.Version, 4096, 10, null));
        "HTTP"u8.CopyTo(hello.AsSpan(ProtocolConstants.FrameHeaderSize));

        await raw.SendAsync(hello);

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
    }

    [Fact]
    public async Task ServerWithAnAuthToken_RefusesAClientWithoutIt_AndServesAClientWithIt()
    {
        var serverOptions = new MuxServerOptions { AuthToken = "secret" };
        await using TestHost host = await TestHost.StartTcpAsync(serverOptions, new MuxClientOptions { AuthToken = "secret" });

        var ex = await Assert.ThrowsAsync<MuxConnectionException>(
            () => MuxClient.ConnectAsync(host.Server.LocalEndPoint!, new MuxClientOptions()).WaitAsync(TestHost.Patience));
        Assert.Contains("auth token", ex.Message, StringComparison.Ordinal);
        Assert.Equal(MuxCloseReason.ProtocolError, ex.Reason);
        var remote = Assert.IsType<MuxRemoteException>(ex.InnerException);
        Assert.Equal(MuxStatusCode.ProtocolError, remote.StatusCode);

        var wrong = await Assert.ThrowsAsync<MuxConnectionException>(
            () => MuxClient.ConnectAsync(host.Server.LocalEndPoint!, new MuxClientOptions { AuthToken = "Secret" }).WaitAsync(TestHost.Patience));
        Assert.Contains("auth token", wrong.Message, StringComparison.Ordinal);

        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        await using MuxClient second = await MuxClient.ConnectAsync(host.Server.LocalEndPoint!, new MuxClientOptions { AuthToken = "secret" }).WaitAsync(TestHost.Patience);
        Assert.Equal(9, await second.CreateProxy<ITestService>().Add(4, 5).AsTask().WaitAsync(TestHost.Patience));
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 2, "the refused connections to be dropped");
    }

    [Fact]
    public async Task ServerWithALongAuthToken_AcceptsAClientThatSendsIt()
    {
        string token = new('k', 300);

        await using TestHost host = await TestHost.StartTcpAsync(new MuxServerOptions { AuthToken = token }, new MuxClientOptions { AuthToken = token }).WaitAsync(TestHost.Patience);

        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task RawHandshakenConnection_SendingAnUnknownMethodId_GetsUnknownMethodForThatCall_AndStaysOpen()
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        HandshakeSettings serverSettings = await raw.HandshakeAsync();
        Assert.Equal(new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, 1000, null) { MaxMessageSize = 64 * 1024 * 1024, MaxMetadataSize = 8 * 1024 }, serverSettings);

        await raw.SendAsync(WriteFrame(FrameType.Request, 17, 0xdeadbeef, new RawBody([0x90])));

        ReceivedFrame reply = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Error, reply.Type);
        Assert.Equal(17u, reply.CallId);
        ErrorBody error = ErrorBody.Read(reply.Payload);
        Assert.Equal(MuxStatusCode.UnknownMethod, error.Code);
        Assert.Equal(2, (int)error.Code);
        Assert.Contains("0xdeadbeef", error.Message, StringComparison.Ordinal);
        Assert.Null(error.RemoteType);

        await raw.SendAsync(WriteRawFrame(FrameType.Ping, 0, s_pingPayload));
        ReceivedFrame pong = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Pong, pong.Type);
        Assert.Equal(0u, pong.CallId);
        Assert.Equal(s_pingPayload, pong.Payload);

        // And a real call on the same raw connection is still served.
        await raw.SendAsync(WriteFrame(FrameType.Request, 18, TestServiceIds.Add, new RawBody([0x92, 0x02, 0x03])));
        ReceivedFrame response = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Response, response.Type);
        Assert.Equal(18u, response.CallId);
        Assert.Equal(new byte[] { 0x05 }, response.Payload);
        Assert.Equal(2, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task RequestOverTheServersMaxFrameSize_IsSentInFragmentsThatFitIt_AndTheConnectionKeepsWorking()
    {
        var serverOptions = new MuxServerOptions { MaxFrameSize = 4096 };
        await using TestHost host = await TestHost.StartTcpAsync(serverOptions);

        // The client knows the server's limit from the HelloAck and sends fragments no larger.
        string large = string.Concat(Enumerable.Range(0, 2000).Select(static i => i.ToString(System.Globalization.CultureInfo.InvariantCulture)));
        Assert.Equal(large, await host.Proxy.Echo(large).WaitAsync(TestHost.Patience));

        Assert.True(host.Client.IsConnected);
        Assert.Equal(0, host.Client.PendingCalls);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal("small", await host.Proxy.Echo("small").WaitAsync(TestHost.Patience));
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    [Fact]
    public async Task RawRequestOverTheServersMaxFrameSize_GetsTheConnectionClosed()
    {
        var serverOptions = new MuxServerOptions { MaxFrameSize = 4096 };
        await using TestHost host = await TestHost.StartTcpAsync(serverOptions);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        HandshakeSettings serverSettings = await raw.HandshakeAsync();
        Assert.Equal(4096, serverSettings.MaxFrameSize);

        // A client that ignores the advertised limit: only the header has to arrive for the server to act.
        byte[] header = new byte[ProtocolConstants.FrameHeaderSize + ProtocolConstants.RequestHeaderSize];
        BinaryPrimitives.WriteUInt32LittleEndian(header, 10_000);
        header[4] = (byte)FrameType.Request;
        BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(6), 1);
        BinaryPrimitives.WriteUInt32LittleEndian(header.AsSpan(10), TestServiceIds.Echo);
        await raw.SendAsync(header);

        await raw.AssertClosedByOtherSideAsync();
        await Hosts.WaitUntilAsync(() => host.Server.ActiveConnections == 1, "the server to drop the raw connection");
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task ResponseOverTheClientsMaxFrameSize_IsSentInFragmentsThatFitIt_AndTheConnectionKeepsWorking()
    {
        await using TestHost host = await TestHost.StartTcpAsync(clientOptions: new MuxClientOptions { MaxFrameSize = 4096 });

        Assert.Equal(new byte[100_000], await host.Proxy.Bytes(100_000).WaitAsync(TestHost.Patience));

        Assert.True(host.Client.IsConnected);
        Assert.Equal(5, await host.Proxy.Add(2, 3).AsTask().WaitAsync(TestHost.Patience));
        Assert.Equal(100, (await host.Proxy.Bytes(100).WaitAsync(TestHost.Patience)).Length);
        Assert.Equal(1, host.Server.ActiveConnections);
    }

    // Not a bad input at all: an ordinary call whose arguments and result are a few hundred bytes,
    // i.e. larger than the 256-byte staging buffer each thread starts with.
    [Theory]
    [InlineData(300)]
    [InlineData(1000)]
    [InlineData(3000)]
    public async Task CallWithAMediumSizedPayload_RoundTrips(int length)
    {
        await using TestHost host = await TestHost.StartTcpAsync();
        string text = new('m', length);

        Assert.Equal(text, await host.Proxy.Echo(text).WaitAsync(TestHost.Patience));
        Assert.Equal(length, (await host.Proxy.Bytes(length).WaitAsync(TestHost.Patience)).Length);
        Assert.True(host.Client.IsConnected);
    }
}
