using System.Net.Sockets;
using StreamJsonRpc;

namespace Mux.LoadRunner.Peers.StreamJsonRpc;

/// <summary>
/// How both ends of the StreamJsonRpc peer talk: MessagePack messages (MessagePack-CSharp, the
/// serializer Mux uses) behind a 4-byte length header, over one TCP socket.
/// </summary>
internal static class JsonRpcWire
{
    public static JsonRpc Attach(Socket socket)
    {
        socket.NoDelay = true;
        var stream = new NetworkStream(socket, ownsSocket: true);
        return new JsonRpc(new LengthHeaderMessageHandler(stream, stream, new MessagePackFormatter()));
    }
}
