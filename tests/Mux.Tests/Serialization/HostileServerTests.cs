using System.Net.Sockets;
using MessagePack;
using Mux.Protocol;
using Mux.Tests.Generated;
using Mux.Tests.Infrastructure;
using Mux.Tests.Protocol;
using static Mux.Tests.Protocol.ProtocolTestHelpers;

namespace Mux.Tests.Serialization;

/// <summary>
/// A client reads what its server sends as untrusted, as a server reads its clients: a body nested
/// a million levels deep (about 1 MB, within one default frame) fails the one call it answers,
/// on each path a server's bytes reach the client's deserializer (a call's result, an item of the
/// server's stream, the arguments of a call the server makes to the client), and the connection
/// goes on. Read with no depth limit, such a body overflows the stack, which ends the process.
/// </summary>
public sealed class HostileServerTests
{
    private const string Answers = "Mux.Tests.Serialization.IDeepAnswers.";
    private const string Arguments = "Mux.Tests.Serialization.IDeepArguments.";

    /// <summary>0x91 (an array of one element) a million times, then nil: a Node, an object or a
    /// Tree a million levels deep, or the argument list of one.</summary>
    private static readonly byte[] s_millionLevels = [.. Enumerable.Repeat((byte)0x91, 1_000_000), 0xc0];

    public static TheoryData<string> RecursiveTypes => new() { "Node", "Object", "Tree" };

    [Theory]
    [MemberData(nameof(RecursiveTypes))]
    public async Task AResultNestedAMillionLevelsDeep_FailsItsCall_AndTheConnectionGoesOn(string type)
    {
        await using HostileServer scene = await HostileServer.StartAsync();
        Task call = type switch
        {
            "Node" => scene.Proxy.GetNode(),
            "Object" => scene.Proxy.GetObject(),
            _ => scene.Proxy.GetTree(),
        };
        ReceivedFrame request = await scene.Server.ExpectFrameAsync();
        Assert.Equal(MuxMethodId.Compute(Answers + "Get" + type), request.MethodId);

        await scene.Server.SendAsync(WriteRawFrame(FrameType.Response, request.CallId, s_millionLevels));

        var error = await Assert.ThrowsAsync<MessagePackSerializationException>(() => call.WaitAsync(TestHost.Patience));
        Assert.StartsWith($"The response to IDeepAnswers.Get{type} could not be read as ", error.Message, StringComparison.Ordinal);
        Assert.Contains("maximum depth allowed of 500", error.Message, StringComparison.Ordinal);
        await scene.AssertConnectionGoesOnAsync();
    }

    [Theory]
    [MemberData(nameof(RecursiveTypes))]
    public async Task AStreamItemNestedAMillionLevelsDeep_FailsTheConsumersRead_AndTheConnectionGoesOn(string type)
    {
        await using HostileServer scene = await HostileServer.StartAsync();
        Task<int> consume = type switch
        {
            "Node" => CountAsync(scene.Proxy.Nodes()),
            "Object" => CountAsync(scene.Proxy.Objects()),
            _ => CountAsync(scene.Proxy.Trees()),
        };
        ReceivedFrame request = await scene.Server.ExpectFrameAsync();
        Assert.Equal(MuxMethodId.Compute(Answers + type + "s"), request.MethodId);

        await scene.Server.SendAsync(WriteRawFrame(FrameType.StreamItem, request.CallId, [0xc0])); // One null item first.
        await scene.Server.SendAsync(WriteRawFrame(FrameType.StreamItem, request.CallId, s_millionLevels));

        var error = await Assert.ThrowsAsync<MessagePackSerializationException>(() => consume.WaitAsync(TestHost.Patience));
        Assert.Contains("maximum depth allowed of 500", error.GetBaseException().Message, StringComparison.Ordinal);

        // The consumer's loop ended with the failure, which cancels the call.
        ReceivedFrame cancel = await scene.Server.ExpectFrameAsync();
        Assert.Equal((FrameType.Cancel, request.CallId), (cancel.Type, cancel.CallId));
        await scene.AssertConnectionGoesOnAsync();
    }

    [Theory]
    [MemberData(nameof(RecursiveTypes))]
    public async Task ArgumentsOfTheServersCallNestedAMillionLevelsDeep_AreAnsweredInvalidArguments_AndTheConnectionGoesOn(string type)
    {
        await using HostileServer scene = await HostileServer.StartAsync();
        uint method = MuxMethodId.Compute(Arguments + "Take" + type);

        await scene.Server.SendAsync(ServerRequest(1, method, s_millionLevels));

        ReceivedFrame answer = await scene.Server.ExpectFrameAsync();
        Assert.Equal((FrameType.Error, FrameFlags.ServerInitiated, 1u), (answer.Type, answer.Flags, answer.CallId));
        ErrorBody error = ErrorBody.Read(answer.Payload);
        Assert.Equal(MuxStatusCode.InvalidArguments, error.Code);
        Assert.StartsWith($"The arguments of IDeepArguments.Take{type} could not be read: ", error.Message, StringComparison.Ordinal);
        Assert.Contains("maximum depth allowed of 500", error.Message, StringComparison.Ordinal);

        // The same method with three levels: [[[nil]]] is one argument two levels deep.
        await scene.Server.SendAsync(ServerRequest(2, method, [0x91, 0x91, 0x91, 0xc0]));
        ReceivedFrame good = await scene.Server.ExpectFrameAsync();
        Assert.Equal((FrameType.Response, FrameFlags.ServerInitiated, 2u), (good.Type, good.Flags, good.CallId));
        Assert.Equal(type == "Tree" ? 1 : 2, MessagePackSerializer.Deserialize<int>(good.Payload));
        await scene.AssertConnectionGoesOnAsync();
    }

    [Fact]
    public async Task AClientsOwnSecurity_IsWhatItReadsWith()
    {
        // The user's limit of 20 levels, not UntrustedData's 500: 30 levels fail, 3 are read.
        MessagePackSerializerOptions shallow = MessagePackSerializerOptions.Standard.WithSecurity(MessagePackSecurity.UntrustedData.WithMaximumObjectGraphDepth(20));
        await using HostileServer scene = await HostileServer.StartAsync(shallow);
        byte[][] answers = [[.. Enumerable.Repeat((byte)0x91, 30), 0xc0], [0x91, 0x91, 0x91, 0xc0]];
        var calls = new List<Task<Node?>>();
        foreach (byte[] answer in answers)
        {
            calls.Add(scene.Proxy.GetNode());
            ReceivedFrame request = await scene.Server.ExpectFrameAsync();
            await scene.Server.SendAsync(WriteRawFrame(FrameType.Response, request.CallId, answer));
        }

        var error = await Assert.ThrowsAsync<MessagePackSerializationException>(() => calls[0].WaitAsync(TestHost.Patience));
        Assert.Contains("maximum depth allowed of 20", error.Message, StringComparison.Ordinal);
        Node? node = await calls[1].WaitAsync(TestHost.Patience);
        Assert.NotNull(node?.Child?.Child);
        Assert.Null(node.Child.Child.Child);
    }

    [Fact]
    public async Task AResultAnnouncingTwoBillionChildren_FailsOnlyItsCall()
    {
        await using HostileServer scene = await HostileServer.StartAsync();
        Task<Tree?> call = scene.Proxy.GetTree();
        ReceivedFrame request = await scene.Server.ExpectFrameAsync();

        // A Tree whose children list announces 2^31-1 entries in five bytes.
        await scene.Server.SendAsync(WriteRawFrame(FrameType.Response, request.CallId, [0x91, 0xdd, 0x7f, 0xff, 0xff, 0xff, 0xc0]));

        var error = await Assert.ThrowsAsync<MessagePackSerializationException>(() => call.WaitAsync(TestHost.Patience));
        Assert.StartsWith("The response to IDeepAnswers.GetTree could not be read as Tree: ", error.Message, StringComparison.Ordinal);
        await scene.AssertConnectionGoesOnAsync();
    }

    private static async Task<int> CountAsync<T>(IAsyncEnumerable<T> items)
    {
        int count = 0;
        await foreach (T _ in items)
        {
            count++;
        }

        return count;
    }

    /// <summary>A Request the server starts (ServerInitiated) with the given argument bytes.</summary>
    private static byte[] ServerRequest(uint callId, uint methodId, byte[] arguments)
    {
        var body = new RawBody(arguments);
        using var output = new PooledBufferWriter();
        FrameWriter.Write(output, FrameType.Request, callId, methodId, ref body, FrameFlags.ServerInitiated);
        return output.WrittenSpan.ToArray();
    }

    /// <summary>A real client (serving <see cref="IDeepArguments"/>, not reconnecting) connected to
    /// a hand-written server that sends whatever the test gives it.</summary>
    private sealed class HostileServer : IAsyncDisposable
    {
        private readonly TcpListener _listener;

        private HostileServer(TcpListener listener, RawMuxPeer server, MuxClient client)
        {
            _listener = listener;
            Server = server;
            Client = client;
            Proxy = client.CreateProxy<IDeepAnswers>();
        }

        public RawMuxPeer Server { get; }

        public MuxClient Client { get; }

        public IDeepAnswers Proxy { get; }

        public static async Task<HostileServer> StartAsync(MessagePackSerializerOptions? serializerOptions = null)
        {
            TcpListener listener = RawMuxPeer.Listen();
            var options = new MuxClientOptions { AutoReconnect = false, SerializerOptions = serializerOptions ?? MessagePackSerializerOptions.Standard };
            Task<MuxClient> connecting = MuxClient.ConnectAsync(listener.LocalEndpoint, options);
            RawMuxPeer server = await RawMuxPeer.AcceptAsync(listener);
            await server.AnswerHelloAsync();
            MuxClient client = await connecting.WaitAsync(TestHost.Patience);
            client.AddService<IDeepArguments>(new DeepArguments());
            return new HostileServer(listener, server, client);
        }

        /// <summary>A well-formed call on the same connection is answered: the hostile body failed
        /// only its own call.</summary>
        public async Task AssertConnectionGoesOnAsync()
        {
            Task<int> call = Proxy.Count();
            ReceivedFrame request;
            do
            {
                request = await Server.ExpectFrameAsync(); // Skipping what the failed call still sent (a Cancel, credit).
            }
            while (request.Type != FrameType.Request);

            Assert.Equal(MuxMethodId.Compute(Answers + "Count"), request.MethodId);
            await Server.SendAsync(RawServerFrames.Response(request.CallId, 7));
            Assert.Equal(7, await call.WaitAsync(TestHost.Patience));
            Assert.Equal(MuxClientState.Connected, Client.State);
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            await Server.DisposeAsync();
            _listener.Stop();
        }
    }
}
