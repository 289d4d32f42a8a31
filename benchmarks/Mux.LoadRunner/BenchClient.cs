using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using Mux.Diagnostics;
using Mux.Samples.Contracts;

namespace Mux.LoadRunner;

/// <summary>Frame and socket counters of a connection (or a server's connections), and for Mux the
/// time its reader loop and writer role spent (the library's stage clock).</summary>
internal readonly record struct TransportCounters(long FramesSent, long SocketSends, long FramesReceived, long SocketReceives, StageTimes Stages = default)
{
    public static TransportCounters operator +(TransportCounters a, TransportCounters b) => new(
        a.FramesSent + b.FramesSent,
        a.SocketSends + b.SocketSends,
        a.FramesReceived + b.FramesReceived,
        a.SocketReceives + b.SocketReceives,
        a.Stages + b.Stages);

    public static TransportCounters operator -(TransportCounters end, TransportCounters start) => new(
        end.FramesSent - start.FramesSent,
        end.SocketSends - start.SocketSends,
        end.FramesReceived - start.FramesReceived,
        end.SocketReceives - start.SocketReceives,
        end.Stages - start.Stages);
}

/// <summary>The client side of one system: one connection shared by every caller.</summary>
internal interface IBenchClient : IAsyncDisposable
{
    /// <summary>Makes one call of the measured method for caller <paramref name="caller"/> and checks the result.</summary>
    ValueTask CallAsync(int caller);

    /// <summary>The connection's frame and socket counters, or null where the library exposes none.</summary>
    TransportCounters? GetCounters();

    /// <summary>Asks the server for its counters over a separate, short-lived connection.</summary>
    Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken);
}

/// <summary>Mux: one <see cref="MuxClient"/>, one proxy, every caller on it.</summary>
internal sealed class MuxBenchClient : IBenchClient
{
    private readonly MuxClient _client;
    private readonly IBenchService _service;
    private readonly EndPoint _endPoint;
    private readonly string _method;

    private readonly bool _tls;

    // mux-ws: the server's MapMux endpoint, which the control connection also goes through; null over TCP.
    private readonly Uri? _webSocket;

    private MuxBenchClient(MuxClient client, EndPoint endPoint, string method, bool tls, Uri? webSocket = null)
    {
        _client = client;
        _tls = tls;
        _webSocket = webSocket;
        _service = client.CreateProxy<IBenchService>();
        _endPoint = endPoint;
        _method = method;
    }

    public static async Task<IBenchClient> ConnectAsync(EndPoint endPoint, string method, CancellationToken cancellationToken, bool tls = false)
    {
        MuxClient client = await MuxClient.ConnectAsync(endPoint, Options(tls), cancellationToken);
        return new MuxBenchClient(client, endPoint, method, tls);
    }

    /// <summary>mux-ws: one client over one WebSocket to the server's MapMux endpoint at <paramref name="endPoint"/>.</summary>
    public static async Task<IBenchClient> ConnectWebSocketAsync(EndPoint endPoint, string method, CancellationToken cancellationToken)
    {
        var uri = new Uri($"ws://{endPoint}{MuxWebSocketServer.Path}");
        MuxClient client = await MuxClient.ConnectAsync(uri, Options(tls: false), cancellationToken);
        return new MuxBenchClient(client, endPoint, method, tls: false, uri);
    }

    /// <summary>One client over several server instances (MuxClientOptions.EndPoints), returned once
    /// every instance is connected so that the measured window starts with all of them.</summary>
    public static async Task<MuxBenchClient> ConnectToAllAsync(IReadOnlyList<EndPoint> endPoints, string method, CancellationToken cancellationToken)
    {
        MuxClientOptions options = Options(tls: false);
        foreach (EndPoint endPoint in endPoints)
        {
            options.EndPoints.Add(endPoint);
        }

        MuxClient client = await MuxClient.ConnectAsync(options, cancellationToken);
        while (client.GetEndPointStatistics().Count(e => e.State == MuxClientState.Connected) < endPoints.Count)
        {
            await Task.Delay(10, cancellationToken);
        }

        return new MuxBenchClient(client, endPoints[0], method, tls: false);
    }

    /// <summary>The client, for its per-instance statistics.</summary>
    public MuxClient Client => _client;

    /// <summary>Asks the server at <paramref name="endPoint"/> for its counters over a separate connection.</summary>
    public static async Task<ServerStats> GetServerStatsAsync(EndPoint endPoint, CancellationToken cancellationToken)
    {
        await using MuxClient control = await MuxClient.ConnectAsync(endPoint, Options(tls: false), cancellationToken);
        return await control.CreateProxy<IBenchControl>().GetStats().WaitAsync(cancellationToken);
    }

    // The benchmark measures TLS's cost, not trust: the server's throwaway self-signed certificate is
    // accepted without checks. Never do this outside a benchmark.
    private static MuxClientOptions Options(bool tls) => PassThroughInterceptor.AddTo(new MuxClientOptions
    {
        ConnectTimeout = TimeSpan.FromSeconds(10),
        Tls = tls ? new SslClientAuthenticationOptions { TargetHost = "localhost", RemoteCertificateValidationCallback = static (_, _, _, _) => true } : null,
    });

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    public async ValueTask CallAsync(int caller)
    {
        switch (_method)
        {
            case "add":
                BenchChecks.Sum(await _service.Add(1, 2));
                break;
            case "list1":
                Check(await _service.List(1), 1);
                break;
            case "list100":
                Check(await _service.List(100), 100);
                break;
            case "bytes1k":
                BenchChecks.Bytes((await _service.Bytes(1024)).Length);
                break;
            default:
                throw new ArgumentException($"Unknown method '{_method}'.");
        }
    }

    /// <summary>--blocking-handler: one call of the handler that blocks its server thread for
    /// <paramref name="milliseconds"/>, on the same connection as the measured callers.</summary>
    public async Task BlockAsync(int milliseconds)
    {
        int returned = await _service.Block(milliseconds);
        if (returned != milliseconds)
        {
            throw new InvalidDataException($"Block({milliseconds}) returned {returned}.");
        }
    }

    private static void Check(List<User> users, int count) =>
        BenchChecks.Users(count, users.Count, users.Count > 0 ? users[0].City : null);

    public TransportCounters? GetCounters()
    {
        MuxConnectionStatistics stats = _client.GetStatistics();
        return new TransportCounters(stats.FramesSent, stats.SocketSends, stats.FramesReceived, stats.SocketReceives, _client.Connection.GetStageTimes());
    }

    public async Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken)
    {
        await using MuxClient control = _webSocket is null
            ? await MuxClient.ConnectAsync(_endPoint, Options(_tls), cancellationToken)
            : await MuxClient.ConnectAsync(_webSocket, Options(tls: false), cancellationToken);
        return await control.CreateProxy<IBenchControl>().GetStats().WaitAsync(cancellationToken);
    }

    public ValueTask DisposeAsync() => _client.DisposeAsync();
}

/// <summary>
/// The raw echo client: one socket; caller i's request carries id i, and the receive loop completes
/// caller i's waiting call when the response with id i arrives. Completion runs the caller's
/// continuation inline on the receive loop (no thread hop), the cheapest way to get the reply to it.
/// </summary>
internal sealed class RawBenchClient : IBenchClient
{
    private readonly Socket _socket;
    private readonly EndPoint _endPoint;
    private readonly FrameReceiver _receiver;
    private readonly SingleFrameSender? _single;
    private readonly BatchedFrameWriter? _batched;
    private readonly byte[][] _requests;
    private readonly CallSlot[] _slots;
    private readonly int _responseBytes;
    private readonly Task _receiveLoop;

    private RawBenchClient(Socket socket, EndPoint endPoint, bool batched, int callers, BenchMethod method)
    {
        _socket = socket;
        _endPoint = endPoint;
        _receiver = new FrameReceiver(socket);
        _single = batched ? null : new SingleFrameSender(socket);
        _batched = batched ? new BatchedFrameWriter(socket) : null;
        _responseBytes = method.ResponseFrameBytes;
        _requests = new byte[callers][];
        _slots = new CallSlot[callers];
        for (int i = 0; i < callers; i++)
        {
            // Each caller's request is built once: id = caller index, padded to the Mux request size.
            _requests[i] = new byte[Math.Max(method.RequestFrameBytes, RawFrame.MinRequestBytes)];
            RawFrame.WriteRequest(_requests[i], (uint)i, Math.Max(method.ResponseFrameBytes, RawFrame.MinResponseBytes));
            _slots[i] = new CallSlot();
        }

        _receiveLoop = Task.Run(ReceiveLoopAsync);
    }

    public static async Task<IBenchClient> ConnectAsync(EndPoint endPoint, bool batched, int callers, BenchMethod method, CancellationToken cancellationToken)
    {
        Socket socket = await ConnectSocketAsync(endPoint, cancellationToken);
        return new RawBenchClient(socket, endPoint, batched, callers, method);
    }

    private static async Task<Socket> ConnectSocketAsync(EndPoint endPoint, CancellationToken cancellationToken)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        try
        {
            await socket.ConnectAsync(endPoint, cancellationToken);
            return socket;
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    public async ValueTask CallAsync(int caller)
    {
        CallSlot slot = _slots[caller];
        short token = slot.Prepare();
        if (_batched is not null)
        {
            _batched.Write(_requests[caller]);
        }
        else
        {
            await _single!.SendAsync(_requests[caller]);
        }

        int length = await new ValueTask<int>(slot, token);
        if (length != Math.Max(_responseBytes, RawFrame.MinResponseBytes))
        {
            throw new InvalidDataException($"Raw response of {length} bytes; expected {_responseBytes}.");
        }
    }

    private async Task ReceiveLoopAsync()
    {
        Exception? fault = null;
        try
        {
            while (await _receiver.ReceiveAsync())
            {
                while (_receiver.TryReadFrame(out int offset, out int length))
                {
                    uint id = RawFrame.ReadId(_receiver.Buffer.AsSpan(offset, length));
                    if (id >= (uint)_slots.Length)
                    {
                        throw new InvalidDataException($"Raw response for unknown id {id}.");
                    }

                    _slots[id].Complete(length);
                }
            }

            fault = new IOException("The raw server closed the connection.");
        }
        catch (Exception ex)
        {
            fault = ex;
        }
        finally
        {
            foreach (CallSlot slot in _slots)
            {
                slot.Fail(fault ?? new IOException("The raw connection closed."));
            }
        }
    }

    public TransportCounters? GetCounters()
    {
        long framesSent = _batched?.FramesSent ?? _single!.FramesSent;
        long sends = _batched?.SocketSends ?? _single!.SocketSends;
        return new TransportCounters(framesSent, sends, _receiver.FramesReceived, _receiver.SocketReceives);
    }

    public async Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken)
    {
        using Socket control = await ConnectSocketAsync(_endPoint, cancellationToken);
        var request = new byte[RawFrame.MinRequestBytes];
        RawFrame.WriteRequest(request, RawFrame.ControlId, RawFrame.StatsFrameBytes);
        await RawFrame.SendAllAsync(control, request);
        var receiver = new FrameReceiver(control);
        while (await receiver.ReceiveAsync().AsTask().WaitAsync(cancellationToken))
        {
            if (receiver.TryReadFrame(out int offset, out int length))
            {
                return RawFrame.DecodeStats(receiver.Buffer.AsSpan(offset, length));
            }
        }

        throw new IOException("The raw server closed the control connection without answering.");
    }

    public async ValueTask DisposeAsync()
    {
        _batched?.Close();
        try
        {
            _socket.Shutdown(SocketShutdown.Both);
        }
        catch (SocketException)
        {
            // Already gone.
        }

        _socket.Dispose();
        await _receiveLoop.WaitAsync(TimeSpan.FromSeconds(5)).ContinueWith(static _ => { }, TaskScheduler.Default);
        if (_batched is not null)
        {
            await _batched.Completion.WaitAsync(TimeSpan.FromSeconds(5)).ContinueWith(static _ => { }, TaskScheduler.Default);
        }
    }

    /// <summary>One caller's call in flight: completed by the receive loop, reset for every call.</summary>
    private sealed class CallSlot : IValueTaskSource<int>
    {
        private readonly Lock _gate = new();
        private ManualResetValueTaskSourceCore<int> _core;
        private bool _waiting;
        private Exception? _fault;

        public short Prepare()
        {
            lock (_gate)
            {
                if (_fault is not null)
                {
                    throw new IOException("The raw connection is closed.", _fault);
                }

                _core.Reset();
                _waiting = true;
                return _core.Version;
            }
        }

        public void Complete(int length)
        {
            lock (_gate)
            {
                if (!_waiting)
                {
                    throw new InvalidDataException("A raw response arrived for a caller with no call in flight.");
                }

                _waiting = false;
            }

            _core.SetResult(length);
        }

        public void Fail(Exception fault)
        {
            bool wasWaiting;
            lock (_gate)
            {
                _fault = fault;
                wasWaiting = _waiting;
                _waiting = false;
            }

            if (wasWaiting)
            {
                _core.SetException(fault);
            }
        }

        public int GetResult(short token) => _core.GetResult(token);

        public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);
    }
}
