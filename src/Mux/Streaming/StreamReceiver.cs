using System.Buffers;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.ExceptionServices;
using System.Threading.Channels;
using MessagePack;
using Mux.Connection;
using Mux.Protocol;

namespace Mux.Streaming;

/// <summary>
/// The consuming end of one stream of a call, on either side. The reader loop copies each
/// StreamItem's bytes in (it never blocks, never deserializes, never runs user code); the consumer
/// reads them out and deserializes on its own thread. Credit goes back to the producer as items
/// are read, half a window at a time, so at most one window of items is ever buffered here: a
/// producer that sends more than it was granted breaks the protocol and its connection closes.
/// </summary>
internal sealed class StreamReceiver
{
    private readonly MuxConnection _connection;

    // Credit is sent back once this many items have been read (half the window, at least 1):
    // fewer StreamCredit frames than one per item, and the producer never runs dry while the
    // consumer keeps up. Immutable.
    private readonly int _creditBatch;

    // The received items. The reader loop is the only writer; the consumer (and Abort) read.
    private readonly Channel<ItemBuffer> _items = Channel.CreateUnbounded<ItemBuffer>(
        new UnboundedChannelOptions { SingleWriter = true, SingleReader = false, AllowSynchronousContinuations = false });

    // Items received so far. Written by the reader loop only.
    private long _received;

    // Items the producer may send in all: the window, plus every credit sent since. Written by the
    // consumer before it sends the credit (so the reader loop never sees an item that used credit
    // it has not counted yet); read by the reader loop.
    private long _granted;

    // Items read since the last credit was sent. Consumer only.
    private int _readSinceCredit;

    // How the stream ended, when it did not simply complete: set once (CompareExchange), before
    // the consumer can see the end.
    private Exception? _failure;

    // 1 once the stream was cut short (cancelled, or its consumer left): buffered items are
    // dropped and the consumer stops at once. Set by Abort, from any thread.
    private int _aborted;

    // 1 once the producer has finished (Complete or Abort): no more credit is worth sending.
    private int _ended;

    /// <summary>Creates the receiver of a stream whose producer starts with <paramref name="window"/> items of credit.</summary>
    public StreamReceiver(MuxConnection connection, int window)
    {
        _connection = connection;
        _granted = window;
        _creditBatch = Math.Max(1, window / 2);
    }

    /// <summary>The call the stream belongs to. Set once, before the call's Request (or the
    /// receiver) is published, so before any item can arrive.</summary>
    public uint CallId { get; set; }

    /// <summary>The id space of the call (ServerInitiated for a server's call), which the credit
    /// frames carry. Set with <see cref="CallId"/>.</summary>
    public FrameFlags IdSpace { get; set; }

    /// <summary>Buffers one item. Reader loop only.</summary>
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

    /// <summary>The producer finished: the consumer still reads what is buffered, then ends, with
    /// <paramref name="failure"/> if it is not null. Any thread; only the first end counts.</summary>
    public void Complete(Exception? failure)
    {
        if (Interlocked.Exchange(ref _ended, 1) != 0)
        {
            return;
        }

        Interlocked.CompareExchange(ref _failure, failure, null);
        _items.Writer.TryComplete();
    }

    /// <summary>Ends the stream now, dropping what is buffered (back to the pool) and anything that
    /// still arrives: the consumer's next read throws <paramref name="failure"/> (a Cancel frame, a
    /// closed connection), or with null (the consumer is gone, or the call over) just ends. The
    /// first failure is how the stream ended, also after a plain <see cref="Complete"/>: items
    /// still buffered are dropped, and a consumer must not take the rest for a stream that simply
    /// ended. Any thread; safe to call more than once.</summary>
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

    /// <summary>Waits until an item can be read (true) or the stream has ended (false).</summary>
    public ValueTask<bool> WaitToReadAsync(CancellationToken cancellationToken) =>
        Volatile.Read(ref _aborted) != 0 ? new ValueTask<bool>(false) : _items.Reader.WaitToReadAsync(cancellationToken);

    /// <summary>Reads and deserializes (with the connection's options) the next buffered item, if
    /// any, and grants the producer credit for it. Consumer only.</summary>
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

    /// <summary>Throws how the stream ended, if it failed. Call once <see cref="WaitToReadAsync"/>
    /// has returned false.</summary>
    public void ThrowIfFailed()
    {
        if (Volatile.Read(ref _ended) != 0 && _failure is { } failure)
        {
            ExceptionDispatchInfo.Throw(failure);
        }
    }

    [DoesNotReturn]
    private void ThrowOverCredit() =>
        throw new MuxProtocolException($"The peer sent more items on the stream of call {CallId} than the {Volatile.Read(ref _granted)} it was granted (stream window and StreamCredit frames).");

    /// <summary>One received item's MessagePack bytes, copied out of the receive buffer into an
    /// array rented from the shared pool: the first <see cref="Length"/> bytes of <see cref="Array"/>.</summary>
    private readonly record struct ItemBuffer(byte[] Array, int Length);
}
