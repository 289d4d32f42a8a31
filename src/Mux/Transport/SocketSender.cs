using System.Buffers;
using System.Diagnostics;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Threading.Tasks.Sources;

namespace Mux.Transport;

/// <summary>
/// Sends a whole <see cref="ReadOnlySequence{T}"/> in one gather write (sendmsg). One per connection, reused, so a send
/// allocates nothing.
/// </summary>

internal sealed class SocketSender : SocketAsyncEventArgs, IValueTaskSource
{
    // Completion of the send in progress. Only the send loop touches it, one send at a time.
    private ManualResetValueTaskSourceCore<bool> _source;

    // Reused segment list for gather writes. Only the send loop touches it.
    private readonly List<ArraySegment<byte>> _segments = new();

    public SocketSender()
        : base(unsafeSuppressExecutionContextFlow: true)
    {
        // The send loop awaits inline; continuing on the completing I/O thread avoids a hop.
        _source.RunContinuationsAsynchronously = false;
    }

    public ValueTask SendAsync(Socket socket, in ReadOnlySequence<byte> buffer)
    {
        if (buffer.IsSingleSegment)
        {
            BufferList = null;
            SetBuffer(MemoryMarshal.AsMemory(buffer.First));
        }
        else
        {
            SetBuffer(null, 0, 0);
            _segments.Clear();
            foreach (ReadOnlyMemory<byte> segment in buffer)
            {
                _segments.Add(GetArraySegment(segment));
            }

            BufferList = _segments;
        }

        _source.Reset();
        if (socket.SendAsync(this))
        {
            return new ValueTask(this, _source.Version);
        }

        // Completed synchronously: the common case when the kernel buffer has room.
        return SocketError == SocketError.Success
            ? ValueTask.CompletedTask
            : ValueTask.FromException(new SocketException((int)SocketError));
    }

    protected override void OnCompleted(SocketAsyncEventArgs e)
    {
        if (SocketError == SocketError.Success)
        {
            _source.SetResult(true);
        }
        else
        {
            _source.SetException(new SocketException((int)SocketError));
        }
    }

    private static ArraySegment<byte> GetArraySegment(ReadOnlyMemory<byte> memory)
    {
        // Pipe buffers come from the array pool, so this always succeeds for our own pipes.
        bool isArray = MemoryMarshal.TryGetArray(memory, out ArraySegment<byte> segment);
        Debug.Assert(isArray, "Pipe memory is expected to be array-backed.");
        return isArray ? segment : new ArraySegment<byte>(memory.ToArray());
    }

    void IValueTaskSource.GetResult(short token) => _source.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _source.GetStatus(token);

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _source.OnCompleted(continuation, state, token, flags);
}
