using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.ExceptionServices;
using System.Threading.Channels;
using MessagePack;
using Mux.Connection;
using Mux.Protocol;

namespace Mux.Streaming;

/// <summary>The consuming end of one stream of a call. The reader loop copies each item's bytes in (it never blocks,
/// deserializes or runs user code); the consumer deserializes them on its own thread. Credit goes back as items are read, so
/// at most one window is buffered: a producer that sends more closes its connection.</summary>
internal sealed class StreamReceiver
{
    private readonly MuxConnection _connection;

    // Half the window: fewer StreamCredit frames than one per item, and the producer never runs dry while the consumer keeps up.
    private readonly int _creditBatch;

    // The reader loop is the only writer; the consumer (and Abort) read.
    private readonly Channel<ItemBuffer> _items = Channel.CreateUnbounded<ItemBuffer>(
        new UnboundedChannelOptions { SingleWriter = true, SingleReader = false, AllowSynchronousContinuations = false });

    // Reader loop only.
    private long _received;

    // The window plus every credit sent since. Written by the consumer before it sends the credit, so the reader loop never
    // sees an item that used credit it has not counted; read by the reader loop.
    private long _granted;

    // Consumer only.
    private int _readSinceCredit;

    // How the stream ended, when it did not simply complete: set once, before the consumer can see the end.
    private Exception? _failure;

    // 1 once the stream was cut short: buffered items are dropped and the consumer stops at once. Set by Abort, any thread.
    private int _aborted;

    // 1 once the producer has finished (Complete or Abort): no more credit is worth sending.
    private int _ended;

    public StreamReceiver(MuxConnection connection, int window)
    {
        _connection = connection;
        _granted = window;
        _creditBatch = Math.Max(1, window / 2);
    }

    /// <summary>Set once, before the call's Request (or the receiver) is published, so before any item can arrive.</summary>
    public uint CallId { get; set; }

    // ServerInitiated for a server's call, carried by the credit frames. Set with CallId.
    public FrameFlags IdSpace { get; set; }

    /// <summary>Reader loop only.</summary>
    /// <exception cref="MuxProtocolException">The producer sent more items than it was granted.</exception>
    public void OnItem(in ReadOnlySequence<byte> payload)
    {
        if (++_received > Volatile.Read(ref _granted))
        {
            ThrowOverCredit();
        }

        if (Volatile.Read(ref _aborted) != 0)
        {
            return; // Nobody will read it.
        }

        int length = checked((int)payload.Length);
        byte[] buffer = ArrayPool<byte>.Shared.Rent(Math.Max(length, 1));
        payload.CopyTo(buffer);
        if (!_items.Writer.TryWrite(new ItemBuffer(buffer, length)))
        {
            ArrayPool<byte>.Shared.Return(buffer); // Completed meanwhile.
        }
    }

    /// <summary>The consumer reads what is buffered, then ends (with <paramref name="failure"/>). Any thread; the first end counts.</summary>
    public void Complete(Exception? failure)
    {
        if (Interlocked.Exchange(ref _ended, 1) != 0)
        {
            return;
        }

        Interlocked.CompareExchange(ref _failure, failure, null);
        _items.Writer.TryComplete();
    }

    /// <summary>Drops what is buffered and still arrives; the next read throws <paramref name="failure"/>, or ends on null. The
    /// first failure wins even after <see cref="Complete"/>: a stream cut short must not pass for one that ended. Any thread.</summary>
    public void Abort(Exception? failure)
    {
        Volatile.Write(ref _ended, 1);
        Interlocked.CompareExchange(ref _failure, failure, null);

        // After the failure: a consumer that sees the abort finds how the stream ended.
        Volatile.Write(ref _aborted, 1);
        _items.Writer.TryComplete();
        while (_items.Reader.TryRead(out ItemBuffer buffer))
        {
            ArrayPool<byte>.Shared.Return(buffer.Array);
        }
    }

    public ValueTask<bool> WaitToReadAsync(CancellationToken cancellationToken) =>
        Volatile.Read(ref _aborted) != 0 ? new ValueTask<bool>(false) : _items.Reader.WaitToReadAsync(cancellationToken);

    /// <summary>Deserializes the next buffered item, if any, and grants the producer credit for it. Consumer only.</summary>
    public bool TryRead<T>([MaybeNullWhen(false)] out T item)
    {
        if (Volatile.Read(ref _aborted) != 0 || !_items.Reader.TryRead(out ItemBuffer buffer))
        {
            item = default;
            return false;
        }

        try
        {
            item = MessagePackSerializer.Deserialize<T>(buffer.Array.AsMemory(0, buffer.Length), _connection.SerializerOptions);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer.Array);
        }

        if (++_readSinceCredit >= _creditBatch && Volatile.Read(ref _ended) == 0)
        {
            int credit = _readSinceCredit;
            _readSinceCredit = 0;
            Volatile.Write(ref _granted, _granted + credit);
            _connection.Outbound.SendStreamCredit(CallId, IdSpace, credit);
        }

        return true;
    }

    public void ThrowIfFailed()
    {
        if (Volatile.Read(ref _ended) != 0 && _failure is { } failure)
        {
            ExceptionDispatchInfo.Throw(failure);
        }
    }

    [DoesNotReturn]
    private void ThrowOverCredit() =>
        throw new MuxProtocolException(
            $"The peer sent more items on the stream of call {CallId} than the {Volatile.Read(ref _granted)} it was granted " +
            "(stream window and StreamCredit frames).");

    // One item's bytes, in an array rented from the shared pool.
    private readonly record struct ItemBuffer(byte[] Array, int Length);
}
