using System.Net;
using System.Net.Sockets;
using StreamJsonRpc;

namespace Mux.LoadRunner.Peers.StreamJsonRpc;

/// <summary>The StreamJsonRpc peer's client: one <see cref="JsonRpc"/> on one socket, every caller on it.</summary>
internal sealed class JsonRpcBenchClient : ByNameBenchClient
{
    private readonly JsonRpc _rpc;
    private readonly EndPoint _endPoint;

    private JsonRpcBenchClient(JsonRpc rpc, EndPoint endPoint, string method)
        : base(method)
    {
        _rpc = rpc;
        _endPoint = endPoint;
    }

    public static async Task<IBenchClient> ConnectAsync(EndPoint endPoint, string method, CancellationToken cancellationToken)
    {
        JsonRpc rpc = await ConnectRpcAsync(endPoint, cancellationToken);
        return new JsonRpcBenchClient(rpc, endPoint, method);
    }

    private static async Task<JsonRpc> ConnectRpcAsync(EndPoint endPoint, CancellationToken cancellationToken)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            await socket.ConnectAsync(endPoint, cancellationToken);
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        JsonRpc rpc = JsonRpcWire.Attach(socket);
        rpc.StartListening();
        return rpc;
    }

    protected override Task<T> InvokeAsync<T>(string name, object?[] arguments) => _rpc.InvokeAsync<T>(name, arguments);

    public override async Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken)
    {
        using JsonRpc control = await ConnectRpcAsync(_endPoint, cancellationToken);
        return await control.InvokeWithCancellationAsync<ServerStats>("GetStats", [], cancellationToken);
    }

    public override async ValueTask DisposeAsync()
    {
        _rpc.Dispose();
        await _rpc.Completion.WaitAsync(TimeSpan.FromSeconds(5)).ContinueWith(static _ => { }, TaskScheduler.Default);
    }
}
