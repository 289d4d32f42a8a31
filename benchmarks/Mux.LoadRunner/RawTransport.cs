using System.Buffers.Binary;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;

namespace Mux.LoadRunner;

/// <summary>
/// The raw echo's frames: no RPC layer, only what correlation needs. All integers little-endian.
/// <code>
/// request:  u32 length (bytes after it) · u32 id · u32 size of the response frame wanted · zero padding
/// response: u32 length · u32 id · zero padding
/// </code>
/// Requests and responses are padded to the sizes of the Mux frames of the same call
/// (<see cref="BenchMethod"/>). A request with id <see cref="ControlId"/> asks for the server's
/// <see cref="ServerStats"/>, answered as <see cref="StatsFrameBytes"/> bytes (nine i64 after the id).
/// </summary>
internal static class RawFrame
{
    public const int MinRequestBytes = 12;
    public const int MinResponseBytes = 8;
    public const uint ControlId = uint.MaxValue;
    public const int StatsFrameBytes = 8 + (9 * 8);

    public static void WriteRequest(Span<byte> frame, uint id, int responseBytes)
    {
        frame.Clear();
        BinaryPrimitives.WriteInt32LittleEndian(frame, frame.Length - 4);
        BinaryPrimitives.WriteUInt32LittleEndian(frame[4..], id);
        BinaryPrimitives.WriteInt32LittleEndian(frame[8..], responseBytes);
    }

    public static void WriteResponse(Span<byte> frame, uint id)
    {
        frame.Clear();
        BinaryPrimitives.WriteInt32LittleEndian(frame, frame.Length - 4);
        BinaryPrimitives.WriteUInt32LittleEndian(frame[4..], id);
    }

    public static uint ReadId(ReadOnlySpan<byte> frame) => BinaryPrimitives.ReadUInt32LittleEndian(frame[4..]);

    public static byte[] EncodeStats(ServerStats stats)
    {
        var frame = new byte[StatsFrameBytes];
        WriteResponse(frame, ControlId);
        Span<byte> body = frame.AsSpan(8);
        long[] values =
        [
            stats.WindowMarked ? 1 : 0, stats.CpuMicroseconds, stats.AllocatedBytes, stats.Gen0, stats.Gen1,
            stats.Gen2, stats.ConnectionsAccepted, stats.FramesSent, stats.SocketSends,
        ];
        for (int i = 0; i < values.Length; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(body[(i * 8)..], values[i]);
        }

        return frame;
    }

    public static ServerStats DecodeStats(ReadOnlySpan<byte> frame)
    {
        if (frame.Length != StatsFrameBytes || ReadId(frame) != ControlId)
        {
            throw new InvalidDataException($"The raw server answered the control request with a {frame.Length}-byte frame.");
        }

        var values = new long[9];
        for (int i = 0; i < values.Length; i++)
        {
            values[i] = BinaryPrimitives.ReadInt64LittleEndian(frame[(8 + (i * 8))..]);
        }

        return new ServerStats(values[0] != 0, values[1], values[2], values[3], values[4], values[5], values[6], values[7], values[8]);
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    public static async ValueTask SendAllAsync(Socket socket, ReadOnlyMemory<byte> bytes)
    {
        while (!bytes.IsEmpty)
        {
            int sent = await socket.SendAsync(bytes, SocketFlags.None);
            bytes = bytes[sent..];
        }
    }
}

/// <summary>
/// Receives length-prefixed frames from a socket into one reusable buffer. Counts socket receives
/// and frames, so the runner can report frames per read.
/// </summary>
internal sealed class FrameReceiver(Socket socket, int maxFrameBytes = 1 << 20)
{
    private byte[] _buffer = new byte[64 * 1024];
    private int _start;
    private int _end;
    private long _receives;
    private long _frames;

    public long SocketReceives => Volatile.Read(ref _receives);

    public long FramesReceived => Volatile.Read(ref _frames);

    /// <summary>Receives once more; false when the peer closed the connection.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<bool> ReceiveAsync()
    {
        if (_start == _end)
        {
            _start = _end = 0;
        }
        else if (_buffer.Length - _end < 4096)
        {
            int length = _end - _start;
            System.Buffer.BlockCopy(_buffer, _start, _buffer, 0, length);
            _start = 0;
            _end = length;
        }

        int received = await socket.ReceiveAsync(_buffer.AsMemory(_end), SocketFlags.None);
        if (received == 0)
        {
            return false;
        }

        _end += received;
        Volatile.Write(ref _receives, _receives + 1);
        return true;
    }

    /// <summary>The next complete frame (length prefix included) as offset and length in
    /// <see cref="Buffer"/>, or false if it has not fully arrived.</summary>
    public bool TryReadFrame(out int offset, out int length)
    {
        offset = length = 0;
        int available = _end - _start;
        if (available < 4)
        {
            return false;
        }

        int frameBytes = 4 + BinaryPrimitives.ReadInt32LittleEndian(_buffer.AsSpan(_start));
        if (frameBytes < 8 || frameBytes > maxFrameBytes)
        {
            throw new InvalidDataException($"Invalid raw frame length {frameBytes}.");
        }

        if (available < frameBytes)
        {
            if (frameBytes > _buffer.Length - _start)
            {
                // Make room for the whole frame: compact, and grow if one frame exceeds the buffer.
                byte[] target = frameBytes > _buffer.Length ? new byte[Math.Max(frameBytes, _buffer.Length * 2)] : _buffer;
                System.Buffer.BlockCopy(_buffer, _start, target, 0, available);
                _buffer = target;
                _start = 0;
                _end = available;
            }

            return false;
        }

        offset = _start;
        length = frameBytes;
        _start += frameBytes;
        Volatile.Write(ref _frames, _frames + 1);
        return true;
    }

    public byte[] Buffer => _buffer;
}

/// <summary>raw-single: every frame is its own socket send, one at a time under a send lock.</summary>
internal sealed class SingleFrameSender(Socket socket)
{
    private readonly SemaphoreSlim _lock = new(1, 1);
    private long _sends;

    public long FramesSent => Volatile.Read(ref _sends);

    public long SocketSends => Volatile.Read(ref _sends);

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    public async ValueTask SendAsync(ReadOnlyMemory<byte> frame)
    {
        await _lock.WaitAsync();
        try
        {
            await RawFrame.SendAllAsync(socket, frame);
            Volatile.Write(ref _sends, _sends + 1);
        }
        finally
        {
            _lock.Release();
        }
    }
}

/// <summary>
/// raw-batched: writers append frames to a queue; one loop sends everything queued so far in one
/// socket send, swapping buffers so writers keep appending while a send is in progress.
/// </summary>
internal sealed class BatchedFrameWriter : IValueTaskSource
{
    private readonly Socket _socket;
    private readonly Lock _gate = new();
    private byte[] _pending = new byte[64 * 1024];
    private byte[] _sending = new byte[64 * 1024];
    private int _pendingBytes;
    private int _pendingFrames;
    private bool _loopWaiting;
    private bool _closed;
    private ManualResetValueTaskSourceCore<bool> _wake = new() { RunContinuationsAsynchronously = true };
    private long _framesSent;
    private long _socketSends;

    public BatchedFrameWriter(Socket socket)
    {
        _socket = socket;
        Completion = Task.Run(WriteLoopAsync);
    }

    /// <summary>Ends when the loop stops (after <see cref="Close"/> or a send failure).</summary>
    public Task Completion { get; }

    public long FramesSent => Interlocked.Read(ref _framesSent);

    public long SocketSends => Interlocked.Read(ref _socketSends);

    /// <summary>Queues a copy of <paramref name="frame"/>.</summary>
    public void Write(ReadOnlySpan<byte> frame)
    {
        bool wake;
        lock (_gate)
        {
            frame.CopyTo(Reserve(frame.Length));
            wake = Commit();
        }

        if (wake)
        {
            _wake.SetResult(true);
        }
    }

    /// <summary>Queues a response frame of <paramref name="frameBytes"/> bytes for call <paramref name="id"/>.</summary>
    public void WriteResponse(uint id, int frameBytes)
    {
        bool wake;
        lock (_gate)
        {
            RawFrame.WriteResponse(Reserve(frameBytes), id);
            wake = Commit();
        }

        if (wake)
        {
            _wake.SetResult(true);
        }
    }

    public void Close()
    {
        bool wake;
        lock (_gate)
        {
            _closed = true;
            wake = _loopWaiting;
            _loopWaiting = false;
        }

        if (wake)
        {
            _wake.SetResult(false);
        }
    }

    // Under _gate.
    private Span<byte> Reserve(int bytes)
    {
        if (_closed)
        {
            throw new ObjectDisposedException(nameof(BatchedFrameWriter));
        }

        if (_pending.Length - _pendingBytes < bytes)
        {
            Array.Resize(ref _pending, Math.Max(_pending.Length * 2, _pendingBytes + bytes));
        }

        Span<byte> span = _pending.AsSpan(_pendingBytes, bytes);
        _pendingBytes += bytes;
        return span;
    }

    // Under _gate: counts the frame; true if the loop is asleep and this writer must wake it.
    private bool Commit()
    {
        _pendingFrames++;
        bool wake = _loopWaiting;
        _loopWaiting = false;
        return wake;
    }

    private async Task WriteLoopAsync()
    {
        try
        {
            while (true)
            {
                int bytes = 0;
                int frames = 0;
                bool sleep = false;
                lock (_gate)
                {
                    if (_closed)
                    {
                        return;
                    }

                    if (_pendingBytes == 0)
                    {
                        _wake.Reset();
                        _loopWaiting = true;
                        sleep = true;
                    }
                    else
                    {
                        (_pending, _sending) = (_sending, _pending);
                        bytes = _pendingBytes;
                        frames = _pendingFrames;
                        _pendingBytes = 0;
                        _pendingFrames = 0;
                    }
                }

                if (sleep)
                {
                    await new ValueTask(this, _wake.Version);
                    continue;
                }

                await RawFrame.SendAllAsync(_socket, _sending.AsMemory(0, bytes));
                Interlocked.Increment(ref _socketSends);
                Interlocked.Add(ref _framesSent, frames);
            }
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            lock (_gate)
            {
                _closed = true;
            }
        }
    }

    void IValueTaskSource.GetResult(short token) => _wake.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _wake.GetStatus(token);

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _wake.OnCompleted(continuation, state, token, flags);
}
