using System.Net;
using System.Net.Sockets;
using StreamJsonRpc;

namespace Mux.LoadRunner.Peers.StreamJsonRpc;

/// <summary>The StreamJsonRpc peer's server: one <see cref="JsonRpc"/> per accepted socket.</summary>
internal sealed class JsonRpcBenchServer : IPeerServer
{
    private readonly Socket _listener;
    private readonly PeerStats _stats = new();
    private readonly JsonRpcBenchTarget _target;
    private readonly CancellationTokenSource _stopping = new();
    // The connections' JsonRpc instances: added by the accept loop, disposed by DisposeAsync.
    private readonly List<JsonRpc> _connections = [];
    private readonly Lock _gate = new();
    private readonly Task _acceptLoop;

    private JsonRpcBenchServer(int port)
    {
        _target = new JsonRpcBenchTarget(new BenchService(), _stats);
        _listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        _listener.Bind(new IPEndPoint(IPAddress.Loopback, port));
        _listener.Listen(512);
        _acceptLoop = AcceptLoopAsync();
    }

    public int Port => ((IPEndPoint)_listener.LocalEndPoint!).Port;

    public WindowMarks Marks => _stats.Marks;

    public static IPeerServer Start(int port) => new JsonRpcBenchServer(port);

    private async Task AcceptLoopAsync()
    {
        while (true)
        {
            Socket socket;
            try
            {
                socket = await _listener.AcceptAsync(_stopping.Token);
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException or OperationCanceledException)
            {
                return;
            }

            _stats.ConnectionAccepted();
            JsonRpc rpc = JsonRpcWire.Attach(socket);
            rpc.AddLocalRpcTarget(_target);
            lock (_gate)
            {
                _connections.Add(rpc);
            }

            rpc.StartListening();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _stopping.CancelAsync();
        _listener.Dispose();
        await _acceptLoop;
        JsonRpc[] connections;
        lock (_gate)
        {
            connections = [.. _connections];
        }

        foreach (JsonRpc rpc in connections)
        {
            rpc.Dispose();
        }

        _stopping.Dispose();
    }
}
