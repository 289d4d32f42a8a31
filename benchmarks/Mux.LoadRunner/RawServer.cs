using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;

namespace Mux.LoadRunner;

/// <summary>
/// The raw echo server: for every request frame it sends back a response frame of the size the
/// request asks for, with the request's id. No RPC layer and no thread hop: responses are produced
/// on the connection's receive loop. raw-single sends each response with its own socket send;
/// raw-batched queues them and one loop per connection sends whatever is queued in one send.
/// </summary>
internal sealed class RawServer : IAsyncDisposable
{
    private readonly bool _batched;
    private readonly Socket _listener;
    private readonly WindowMarks _marks;
    private readonly List<Task> _connections = [];
    private readonly Lock _gate = new();
    private readonly CancellationTokenSource _stopping = new();
    private long _connectionsAccepted;
    private long _framesSent;
    private long _socketSends;
    private Task? _acceptLoop;

    public RawServer(bool batched, int port)
    {
        _batched = batched;
        _marks = new WindowMarks(() => new TransportCounters(Interlocked.Read(ref _framesSent), Interlocked.Read(ref _socketSends), 0, 0));
        _listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        _listener.Bind(new IPEndPoint(IPAddress.Loopback, port));
        _listener.Listen(512);
    }

    public int Port => ((IPEndPoint)_listener.LocalEndPoint!).Port;

    public WindowMarks Marks => _marks;

    public void Start() => _acceptLoop = AcceptLoopAsync();

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

            Interlocked.Increment(ref _connectionsAccepted);
            socket.NoDelay = true;
            lock (_gate)
            {
                _connections.Add(ServeAsync(socket));
            }
        }
    }

    private async Task ServeAsync(Socket socket)
    {
        // Counters are folded into the server's totals after every send, so marks see them live.
        using (socket)
        {
            await Task.Yield();
            var receiver = new FrameReceiver(socket);
            BatchedFrameWriter? batched = _batched ? new BatchedFrameWriter(socket) : null;
            SingleFrameSender? single = _batched ? null : new SingleFrameSender(socket);
            byte[] response = new byte[64];
            long batchedFrames = 0;
            long batchedSends = 0;
            try
            {
                while (await receiver.ReceiveAsync())
                {
                    while (receiver.TryReadFrame(out int offset, out int length))
                    {
                        ReadOnlySpan<byte> frame = receiver.Buffer.AsSpan(offset, length);
                        uint id = RawFrame.ReadId(frame);
                        if (id == RawFrame.ControlId)
                        {
                            byte[] stats = RawFrame.EncodeStats(await _marks.GetStatsAsync(() => Interlocked.Read(ref _connectionsAccepted)));
                            await RawFrame.SendAllAsync(socket, stats);
                            continue;
                        }

                        int responseBytes = BinaryPrimitives.ReadInt32LittleEndian(frame[8..]);
                        if (responseBytes < RawFrame.MinResponseBytes || responseBytes > 1 << 20)
                        {
                            throw new InvalidDataException($"Invalid response size {responseBytes}.");
                        }

                        if (batched is not null)
                        {
                            batched.WriteResponse(id, responseBytes);
                        }
                        else
                        {
                            if (response.Length != responseBytes)
                            {
                                response = new byte[responseBytes];
                            }

                            RawFrame.WriteResponse(response, id);
                            await single!.SendAsync(response);
                            Interlocked.Increment(ref _framesSent);
                            Interlocked.Increment(ref _socketSends);
                        }
                    }

                    if (batched is not null)
                    {
                        // Fold the writer's counters into the totals once per receive.
                        long frames = batched.FramesSent;
                        long sends = batched.SocketSends;
                        Interlocked.Add(ref _framesSent, frames - batchedFrames);
                        Interlocked.Add(ref _socketSends, sends - batchedSends);
                        batchedFrames = frames;
                        batchedSends = sends;
                    }
                }
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException or InvalidDataException)
            {
                // The client went away or sent garbage: drop this connection only.
            }
            finally
            {
                batched?.Close();
            }
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _stopping.CancelAsync();
        _listener.Dispose();
        if (_acceptLoop is not null)
        {
            await _acceptLoop;
        }

        Task[] connections;
        lock (_gate)
        {
            connections = [.. _connections];
        }

        // Connections end when their clients close; do not wait long for ones that do not.
        await Task.WhenAll(connections).WaitAsync(TimeSpan.FromSeconds(2)).ContinueWith(static _ => { }, TaskScheduler.Default);
        _stopping.Dispose();
    }
}
