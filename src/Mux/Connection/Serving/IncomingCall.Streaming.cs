using System.Buffers;
using System.Runtime.CompilerServices;
using MessagePack;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;

namespace Mux.Connection;

// Streams: a handler's IAsyncEnumerable argument (the caller's stream to it) and result (its stream to the caller).
internal sealed partial class IncomingCall
{
    // The caller's stream, made on first use by the reader loop (an item) or the handler (ReadStream), by CompareExchange.
    private StreamReceiver? _inbound;

    // Credit for the stream to the caller, made on first use by the reader loop (StreamCredit) or the handler, likewise.
    private StreamSendWindow? _outbound;

    // 1 once the call has finished, or its handler takes no stream (SkipUnopenedStream): items that still arrive are dropped.
    private int _streamsClosed;

    // Whether the handler opened the caller's stream (ReadStream). Handler only; reset by Start.
    private bool _readsStream;

    public IAsyncEnumerable<T> ReadStream<T>()
    {
        _readsStream = true;
        StreamReceiver inbound = GetOrCreateInbound() ?? throw new InvalidOperationException(
            $"{MethodName} has finished, or its handler returned before it opened the caller's stream: the stream can no longer be read.");
        return ReadStreamAsync<T>(inbound, default);
    }

    public async ValueTask ReturnStreamAsync<T>(IAsyncEnumerable<T> items)
    {
        if (items is null)
        {
            throw new InvalidOperationException($"{MethodName} returned a null IAsyncEnumerable; a streaming service method must return a stream.");
        }

        SkipUnopenedStream();

        // On a lost connection the producer cancels this call before it disposes the enumerator.
        await StreamProducer.SendAsync(Connection, items, GetOrCreateOutbound()!, CancellationToken, servedCall: this).ConfigureAwait(false);
        SendResult(default(VoidResult)); // The end of the stream: the call's Response.
    }

    private async IAsyncEnumerable<T> ReadStreamAsync<T>(StreamReceiver inbound, [EnumeratorCancellation] CancellationToken cancellationToken)
    {
        while (await inbound.WaitToReadAsync(cancellationToken).ConfigureAwait(false))
        {
            while (TryReadItem(inbound, out T? item))
            {
                cancellationToken.ThrowIfCancellationRequested();
                yield return item!;
            }
        }

        inbound.ThrowIfFailed();
    }

    private bool TryReadItem<T>(StreamReceiver inbound, out T? item)
    {
        try
        {
            return inbound.TryRead(out item);
        }
        catch (MessagePackSerializationException ex)
        {
            throw new InvalidArgumentsException($"An item of the stream sent to {MethodName} could not be read: {ex.GetBaseException().Message}", ex);
        }
    }

    /// <summary>An item of the caller's stream arrived. Reader loop only.</summary>
    internal void OnStreamItem(in ReadOnlySequence<byte> payload) => GetOrCreateInbound()?.OnItem(payload);

    /// <summary>The caller's stream ended: completed (empty payload) or failed (an Error body). Reader loop only.</summary>
    internal void OnStreamEnd(in ReadOnlySequence<byte> payload)
    {
        StreamReceiver? inbound = GetOrCreateInbound();
        if (inbound is null)
        {
            return;
        }

        if (payload.IsEmpty)
        {
            inbound.Complete(null);
            return;
        }

        ErrorBody error = ErrorBody.Read(payload.ToArray());
        inbound.Complete(new MuxRemoteException(error.Code, error.Message, error.RemoteType));
    }

    /// <summary>The caller granted credit for this call's stream. Reader loop only.</summary>
    internal void OnStreamCredit(uint count) => GetOrCreateOutbound()?.Grant(count);

    private StreamReceiver? GetOrCreateInbound()
    {
        StreamReceiver? inbound = Volatile.Read(ref _inbound);
        if (inbound is not null || Volatile.Read(ref _streamsClosed) != 0)
        {
            return inbound;
        }

        var created = new StreamReceiver(Connection, Connection.Settings.StreamWindow) { CallId = CallId, IdSpace = _calls.IdSpace };
        inbound = Interlocked.CompareExchange(ref _inbound, created, null) ?? created;
        if (Volatile.Read(ref _streamsClosed) != 0)
        {
            // Finish ran meanwhile and may have missed it: it holds nothing anyone will read.
            Interlocked.Exchange(ref _inbound, null)?.Abort(null);
            return null;
        }

        if (IsCancellationRequested)
        {
            CancelStreams();
        }

        return inbound;
    }

    private StreamSendWindow? GetOrCreateOutbound()
    {
        StreamSendWindow? outbound = Volatile.Read(ref _outbound);
        if (outbound is not null)
        {
            return outbound;
        }

        var created = new StreamSendWindow(Connection.Peer.StreamWindow) { CallId = CallId, IdSpace = _calls.IdSpace };
        return Interlocked.CompareExchange(ref _outbound, created, null) ?? created;
    }

    private void ResetStreams()
    {
        _inbound = null;
        _outbound = null;
        _streamsClosed = 0;
        _readsStream = false;
    }

    /// <summary>A handler that handed back a pending result or its stream without opening the caller's stream (a generated one
    /// opens it first) takes none: its items are dropped as they arrive, not buffered until the call ends. Handler thread.</summary>
    private void SkipUnopenedStream()
    {
        if (_readsStream)
        {
            return;
        }

        // No fence on every asynchronous call: an item the reader loop takes in the same instant may miss the store, as the
        // load below may miss its stream; that stream is then dropped when the call finishes.
        Volatile.Write(ref _streamsClosed, 1);
        if (Volatile.Read(ref _inbound) is not null)
        {
            CloseStreams(); // Items came before the handler: nobody will read them.
        }
    }

    /// <summary>The call finished: the client's stream, if any, holds nothing anyone will read.</summary>
    private void CloseStreams()
    {
        Interlocked.Exchange(ref _streamsClosed, 1);
        Interlocked.Exchange(ref _inbound, null)?.Abort(null);
    }

    /// <summary>The call was cancelled: a handler reading the caller's stream gets OperationCanceledException at once.</summary>
    private void CancelStreams() =>
        Volatile.Read(ref _inbound)?.Abort(new OperationCanceledException($"{MethodName} was canceled."));
}
