using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Infrastructure.RawServerFrames;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Pipeline;

/// <summary>
/// Call metadata (issue 25): what a caller sets (options, interceptors) is what the handler reads,
/// keys ASCII and case-insensitive, reserved keys refused; MaxMetadataSize fails the call alone with
/// a clear error on either side, the connection serving on; a peer that did not announce the
/// section gets none, and works as before.
/// </summary>
public sealed class MetadataTests
{
    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task Metadata_FromTheBoundOptionsAndAClientInterceptor_ReachesTheHandler_KeysLowerCase_LookedUpInAnyCase(TransportKind kind)
    {
        var client = new MuxClientOptions();
        client.Interceptors.Add(new AddMetadata("Correlation-Id", "c-42"));
        await using PipelineHost host = await PipelineHost.StartAsync(kind, clientOptions: client);
        IPipelineService acme = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { Metadata = { ["Tenant"] = "acme", ["note"] = "grüße, 東京" } });

        Dictionary<string, string> seen = await acme.Metadata().WaitAsync(TestHost.Patience);

        Assert.Equal(new Dictionary<string, string> { ["tenant"] = "acme", ["note"] = "grüße, 東京", ["correlation-id"] = "c-42" }, seen);
        Assert.Equal("acme", await acme.Lookup("TENANT").WaitAsync(TestHost.Patience));
        Assert.Equal("c-42", await acme.Lookup("correlation-ID").WaitAsync(TestHost.Patience));

        // The plain proxy is unchanged: it carries only what the interceptor adds.
        Assert.Equal(new Dictionary<string, string> { ["correlation-id"] = "c-42" }, await host.Proxy.Metadata().WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task ACallWithoutMetadata_ShowsTheHandlerAnEmptyDictionary(TransportKind kind)
    {
        await using PipelineHost host = await PipelineHost.StartAsync(kind);

        Assert.Empty(await host.Proxy.Metadata().WaitAsync(TestHost.Patience));
        Assert.Null(await host.Proxy.Lookup("tenant").WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData("mux-trace", "reserved for Mux")]
    [InlineData("MUX-anything", "reserved for Mux")]
    [InlineData("has space", "U+0020")]
    [InlineData("tab\tkey", "U+0009")]
    [InlineData("ключ", "U+043A")]
    [InlineData("", "cannot be empty")]
    public void AnInvalidOrReservedKey_IsRefusedWhereItIsSet(string key, string reason)
    {
        var options = new MuxCallOptions();

        ArgumentException refused = Assert.Throws<ArgumentException>(() => options.Metadata[key] = "x");

        Assert.Contains(reason, refused.Message, StringComparison.Ordinal);
        Assert.Empty(options.Metadata);
    }

    [Fact]
    public void Keys_AreCaseInsensitive_InTheOptions()
    {
        var options = new MuxCallOptions { Metadata = { ["Tenant"] = "a" } };
        options.Metadata["TENANT"] = "b";

        Assert.Equal("b", Assert.Single(options.Metadata).Value);
        Assert.Throws<ArgumentException>(() => options.Metadata.Add("tenant", "c"));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task MetadataOverTheServersLimit_FailsThatCallBeforeItIsSent_AndTheConnectionServesOn(TransportKind kind)
    {
        await using PipelineHost host = await PipelineHost.StartAsync(kind, new MuxServerOptions { MaxMetadataSize = 1024 });
        IPipelineService big = host.Client.CreateProxy<IPipelineService>(new MuxCallOptions { Metadata = { ["blob"] = new string('x', 2000) } });

        InvalidOperationException refused = await Assert.ThrowsAsync<InvalidOperationException>(() => big.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));

        Assert.Equal("The metadata of the call to IPipelineService.Add is 2009 bytes, over the server's MaxMetadataSize of 1024 bytes (MuxServerOptions.MaxMetadataSize, announced in its handshake); the call was not sent. Send less metadata, or raise MuxServerOptions.MaxMetadataSize.", refused.Message);
        Assert.Equal(0, host.Service.Runs);
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
        Assert.True(host.Client.IsConnected);
    }

    [Fact]
    public async Task MetadataOverTheLimit_FromAPeerThatIgnoresIt_FailsThatCallAlone_AsMessageTooLarge_AndTheConnectionServesOn()
    {
        await using PipelineHost host = await PipelineHost.StartAsync(TransportKind.Tcp, new MuxServerOptions { MaxMetadataSize = 1024 });
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        HandshakeSettings server = await raw.HandshakeAsync();
        Assert.Equal(1024, server.MaxMetadataSize);

        await raw.SendAsync(RequestWithMetadata(5, AddId, Section(("blob", new string('x', 2000))), (1, 2)));

        ErrorBody error = ExpectError(await raw.ExpectFrameAsync(), 5);
        Assert.Equal(MuxStatusCode.MessageTooLarge, error.Code);
        Assert.Equal("The metadata of the client's call to IPipelineService.Add is 2009 bytes, over this server's MaxMetadataSize of 1024 bytes (MuxServerOptions.MaxMetadataSize); the call was not run. Send less metadata, or raise MuxServerOptions.MaxMetadataSize.", error.Message);
        Assert.Equal(0, host.Service.Runs);

        // The same connection still serves: a call with metadata within the limit runs.
        await raw.SendAsync(RequestWithMetadata(6, AddId, Section(("tenant", "acme")), (1, 2)));
        ReceivedFrame answer = await raw.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, 6u), (answer.Type, answer.CallId));
        Assert.Equal(3, MessagePackSerializer.Deserialize<int>(answer.Payload));
    }

    [Theory]
    [InlineData(new byte[] { 0x81, 0xa1, (byte)'k' }, "it is not a MessagePack map of strings")]
    [InlineData(new byte[] { 0x81, 0xa1, (byte)'k', 0xc0 }, "a key or value is nil; both must be strings")]
    [InlineData(new byte[] { 0x82, 0xa1, (byte)'k', 0xa1, (byte)'v', 0xa1, (byte)'K', 0xa1, (byte)'w' }, "the key 'K' appears twice (keys are compared case-insensitively)")]
    [InlineData(new byte[] { 0x81, 0xa2, (byte)'a', (byte)' ', 0xa1, (byte)'v' }, "has the character U+0020")]
    [InlineData(new byte[] { 0x80, 0x00 }, "1 bytes follow the map inside the section")]
    public async Task AnUnreadableSection_FailsThatCallAlone_AsInvalidArguments(byte[] map, string problem)
    {
        await using PipelineHost host = await PipelineHost.StartAsync(TransportKind.Tcp);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();

        await raw.SendAsync(RequestWithMetadata(5, AddId, WithLength(map), (1, 2)));

        ErrorBody error = ExpectError(await raw.ExpectFrameAsync(), 5);
        Assert.Equal(MuxStatusCode.InvalidArguments, error.Code);
        Assert.StartsWith("The metadata of the call to IPipelineService.Add could not be read: ", error.Message, StringComparison.Ordinal);
        Assert.Contains(problem, error.Message, StringComparison.Ordinal);

        await raw.SendAsync(RequestWithMetadata(6, AddId, Section(), (2, 2)));
        Assert.Equal(FrameType.Response, (await raw.ExpectFrameAsync()).Type);
        Assert.Equal(1, host.Service.Runs);
    }

    [Fact]
    public async Task ReservedKeysFromAPeer_AreNotShownToTheHandler()
    {
        await using PipelineHost host = await PipelineHost.StartAsync(TransportKind.Tcp);
        await using RawMuxPeer raw = await RawMuxPeer.ConnectAsync(host.Server.LocalEndPoint!);
        await raw.HandshakeAsync();

        await raw.SendAsync(RequestWithMetadata(5, MuxMethodId.Compute("Mux.Tests.Pipeline.IPipelineService.Metadata"), Section(("mux-future", "1"), ("Tenant", "acme")), Array.Empty<object>()));

        ReceivedFrame answer = await raw.ExpectFrameAsync();
        Assert.Equal(FrameType.Response, answer.Type);
        Assert.Equal(new Dictionary<string, string> { ["Tenant"] = "acme" }, MessagePackSerializer.Deserialize<Dictionary<string, string>>(answer.Payload));
    }

    [Fact]
    public async Task AServerThatDidNotAnnounceMetadata_IsSentNone_AndItsCallsWorkAsBefore()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan });
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        await server.AnswerHelloAsync(); // An earlier build's HelloAck: no maxMetadataSize.
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        ITestService acme = client.CreateProxy<ITestService>(new MuxCallOptions { Metadata = { ["tenant"] = "acme" } });

        Task<int> call = acme.Add(2, 3).AsTask();
        ReceivedFrame request = await server.ExpectFrameAsync();

        // Exactly what an earlier build sends: the Deadline flag only, and the arguments after it.
        Assert.Equal(FrameFlags.Deadline, request.Flags);
        Assert.Equal(2, FirstArgument(request));
        await server.SendAsync(Response(request.CallId, 5));
        Assert.Equal(5, await call.WaitAsync(TestHost.Patience));
    }

    [Fact]
    public async Task AServerThatAnnouncedMetadata_ReceivesTheSection_AfterTheDeadline_BeforeTheArguments()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan });
        await using RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
        Assert.Equal(FrameType.Hello, (await server.ExpectFrameAsync()).Type);
        await server.SendAsync(WriteHelloFrame(FrameType.HelloAck, new HandshakeSettings(ProtocolConstants.Version, 4 * 1024 * 1024, int.MaxValue, null) { MaxMetadataSize = 100 }));
        await using MuxClient client = await connecting.WaitAsync(TestHost.Patience);
        ITestService acme = client.CreateProxy<ITestService>(new MuxCallOptions { Metadata = { ["Tenant"] = "acme" } });

        Task<int> call = acme.Add(2, 3).AsTask();
        ReceivedFrame request = await server.ExpectFrameAsync();

        Assert.Equal(FrameFlags.Deadline | FrameFlags.Metadata, request.Flags);
        byte[] expected = [.. Section(("tenant", "acme")), .. MessagePackSerializer.Serialize(new[] { 2, 3 })];
        Assert.Equal(expected, request.Payload);
        await server.SendAsync(Response(request.CallId, 5));
        Assert.Equal(5, await call.WaitAsync(TestHost.Patience));

        // Over the 100 bytes it announced: refused before sending; the next call goes out as usual.
        ITestService big = client.CreateProxy<ITestService>(new MuxCallOptions { Metadata = { ["blob"] = new string('x', 100) } });
        InvalidOperationException refused = await Assert.ThrowsAsync<InvalidOperationException>(() => big.Add(1, 1).AsTask().WaitAsync(TestHost.Patience));
        Assert.Contains("is 108 bytes, over the server's MaxMetadataSize of 100 bytes", refused.Message, StringComparison.Ordinal);
        Task<int> next = acme.Add(4, 0).AsTask();
        ReceivedFrame nextRequest = await server.ExpectFrameAsync();
        Assert.Equal(4, MessagePackSerializer.Deserialize<int[]>(nextRequest.Payload.AsMemory(Section(("tenant", "acme")).Length))[0]);
        await server.SendAsync(Response(nextRequest.CallId, 4));
        Assert.Equal(4, await next.WaitAsync(TestHost.Patience));
    }

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task AServerHandler_SendsMetadataToItsClient_ThroughABoundRemoteProxy(TransportKind kind)
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        await using (server)
        {
            server.AddService<IMetadataHub>(new MetadataHub());
            MuxClient client;
            if (kind == TransportKind.Tcp)
            {
                await server.StartAsync().WaitAsync(TestHost.Patience);
                client = await MuxClient.ConnectAsync(server.LocalEndPoint!).WaitAsync(TestHost.Patience);
            }
            else
            {
                client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
            }

            await using (client)
            {
                client.AddService<IMetadataClientSide>(new MetadataClientSide());

                string seen = await client.CreateProxy<IMetadataHub>().AskClient("Tenant", "acme").WaitAsync(TestHost.Patience);

                Assert.Equal("tenant=acme", seen);
            }
        }
    }

    private static readonly uint AddId = MuxMethodId.Compute("Mux.Tests.Pipeline.IPipelineService.Add");

    private static ErrorBody ExpectError(ReceivedFrame frame, uint callId)
    {
        Assert.Equal((FrameType.Error, callId), (frame.Type, frame.CallId));
        return ErrorBody.Read(frame.Payload);
    }

    /// <summary>A metadata section: the u32 size, then the MessagePack map.</summary>
    private static byte[] Section(params (string Key, string Value)[] entries)
    {
        var map = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach ((string key, string value) in entries)
        {
            map.Add(key, value);
        }

        return WithLength(MessagePackSerializer.Serialize(map));
    }

    private static byte[] WithLength(byte[] map)
    {
        byte[] section = new byte[4 + map.Length];
        BinaryPrimitives.WriteUInt32LittleEndian(section, (uint)map.Length);
        map.CopyTo(section, 4);
        return section;
    }

    /// <summary>A Request with the Metadata flag: the section, then the arguments.</summary>
    private static byte[] RequestWithMetadata<TArguments>(uint callId, uint methodId, byte[] section, TArguments arguments)
    {
        byte[] frame = WriteFrame(FrameType.Request, callId, methodId, new RawBody([.. section, .. MessagePackSerializer.Serialize(arguments)]));
        frame[5] = (byte)FrameFlags.Metadata;
        return frame;
    }
}

/// <summary>A server that calls its client back with metadata.</summary>
[MuxService]
public interface IMetadataHub
{
    Task<string> AskClient(string key, string value, MuxCallContext? context = null);
}

/// <summary>What the client serves to <see cref="IMetadataHub"/>: the metadata the server's call carried.</summary>
[MuxService]
public interface IMetadataClientSide
{
    Task<string> Describe(MuxCallContext? context = null);
}

public sealed class MetadataHub : IMetadataHub
{
    public Task<string> AskClient(string key, string value, MuxCallContext? context = null) =>
        context!.Client.CreateProxy<IMetadataClientSide>(new MuxCallOptions { Metadata = { [key] = value } }).Describe();
}

public sealed class MetadataClientSide : IMetadataClientSide
{
    public Task<string> Describe(MuxCallContext? context = null) =>
        Task.FromResult(string.Join(",", context!.Metadata.Select(entry => $"{entry.Key}={entry.Value}")));
}
