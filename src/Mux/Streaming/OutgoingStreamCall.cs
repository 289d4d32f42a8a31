using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Streaming;

/// <summary>
/// The caller's side of a streaming call, on either side (a client's call to its server, or a
/// server's call to its client). One call carries the streams: its Request starts it, items flow
/// both ways as StreamItem frames within each consumer's credit, the caller's stream ends with
/// StreamEnd and the callee's with the call's Response (or Error). So a stream ends exactly once,
/// as a call does, also when the connection is lost. The call's token is linked to the caller's:
/// a consumer that stops early, a caller that cancels and a caller's producer that fails all
/// cancel the call, which sends Cancel and ends the callee's side.
/// </summary>
internal static class OutgoingStreamCall
{
    /// <summary>Callee or duplex streaming: enumerates the callee's items, sending
    /// <paramref name="items"/> (when not null) at the same time. <paramref name="metadata"/> is the
    /// call's metadata section, or null.</summary>
    public static async IAsyncEnumerable<TResult> ReceiveAsync<TArguments, TItem, TResult>(
        IOutgoingCallsSource source, uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, byte[]? metadata, [EnumeratorCancellation] CancellationToken cancellationToken)
        where TArguments : struct
    {
        OutgoingCalls calls = await source.GetOutgoingCallsAsync(methodId, cancellationToken).ConfigureAwait(false);
        calls.RequireStreams();
        MuxConnection connection = calls.Connection;
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var receiver = new StreamReceiver(connection, connection.Settings.StreamWindow);
        var streams = new CallStreams(receiver, items is null ? null : StreamSendWindow.Closed());
        Task pump = Task.CompletedTask;
        try
        {
            ValueTask<VoidResult> call = calls.InvokeAsync<TArguments, VoidResult>(methodId, arguments, CallDeadline.None, 0, linked.Token, streams, metadata);
            _ = EndWhenCallEndsAsync(call, receiver, source);
            if (items is not null)
            {
                pump = PumpAsync(connection, streams, items, linked);
            }

            while (await receiver.WaitToReadAsync(cancellationToken).ConfigureAwait(false))
            {
                while (receiver.TryRead(out TResult? item))
                {
                    // Buffered items too stop at a cancellation: the loop ends where the caller cancelled.
                    cancellationToken.ThrowIfCancellationRequested();
                    yield return item!;
                }
            }

            receiver.ThrowIfFailed();
        }
        finally
        {
            // A consumer that stops early (or fails) cancels the call: the callee's producer stops.
            CancelQuietly(linked, connection);
            calls.UnregisterStreams(streams);
            receiver.Abort(null);
            await pump.ConfigureAwait(false);
        }
    }

    /// <summary>Caller streaming: sends <paramref name="items"/> and returns the callee's result.</summary>
    public static async ValueTask<TResult> SendAsync<TArguments, TItem, TResult>(
        IOutgoingCallsSource source, uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, byte[]? metadata, CancellationToken cancellationToken)
        where TArguments : struct
    {
        OutgoingCalls calls = await source.GetOutgoingCallsAsync(methodId, cancellationToken).ConfigureAwait(false);
        calls.RequireStreams();
        MuxConnection connection = calls.Connection;
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var streams = new CallStreams(null, StreamSendWindow.Closed());
        Task pump = Task.CompletedTask;
        try
        {
            ValueTask<TResult> call = calls.InvokeAsync<TArguments, TResult>(methodId, arguments, CallDeadline.None, 0, linked.Token, streams, metadata);
            pump = PumpAsync(connection, streams, items, linked);
            return await call.ConfigureAwait(false);
        }
        catch (Exception) when (streams.SendFailure is { } failure)
        {
            // The producer failed first: whatever the call then ended with (its cancellation, or
            // the handler's failure on reading the failed stream) follows from that.
            ExceptionDispatchInfo.Throw(failure);
            throw;
        }
        catch (MuxConnectionException notRun) when (notRun.IsSafeToRetry)
        {
            ExceptionDispatchInfo.Throw(await source.WhyNotRunAsync(notRun).ConfigureAwait(false));
            throw;
        }
        finally
        {
            // The callee answered (perhaps before reading everything): stop the caller's producer.
            CancelQuietly(linked, connection);
            calls.UnregisterStreams(streams);
            await pump.ConfigureAwait(false);
        }
    }

    /// <summary>Ends the callee's stream when the call ends: its Response (or Error) comes after
    /// its last item on the connection, so every item is buffered by then. A callee that cancelled
    /// its producer ends the consumer's loop with OperationCanceledException, as a cancellation
    /// here does. A call its connection failed unsent ends it with what <paramref name="source"/>
    /// says of that.</summary>
    private static async Task EndWhenCallEndsAsync(ValueTask<VoidResult> call, StreamReceiver receiver, IOutgoingCallsSource source)
    {
        try
        {
            await call.ConfigureAwait(false);
            receiver.Complete(null);
        }
        catch (MuxRemoteException remote) when (remote.StatusCode == MuxStatusCode.Canceled)
        {
            receiver.Complete(new OperationCanceledException(remote.Message, remote));
        }
        catch (MuxConnectionException notRun) when (notRun.IsSafeToRetry)
        {
            receiver.Complete(await source.WhyNotRunAsync(notRun).ConfigureAwait(false));
        }
        catch (Exception ex)
        {
            receiver.Complete(ex);
        }
    }

    /// <summary>Sends the caller's items within the callee's credit, then StreamEnd. Never throws:
    /// a producer that fails records why (ending the callee's stream with it, for a duplex call),
    /// tells the callee (StreamEnd with an error) and cancels the call; a call that ends first
    /// (<paramref name="linked"/> cancelled) just stops it.</summary>
    private static async Task PumpAsync<TItem>(MuxConnection connection, CallStreams streams, IAsyncEnumerable<TItem> items, CancellationTokenSource linked)
    {
        CancellationToken token = linked.Token;
        StreamSendWindow sender = streams.Sender!;
        try
        {
            // Nothing of the stream, StreamEnd included, may go out before the Request is out whole
            // (in fragments, a few writer turns after the call started): the window opens only
            // then. The credit taken here is the first item's.
            await sender.WaitAsync(token).ConfigureAwait(false);
            await StreamProducer.SendAsync(connection, items, sender, token, holdsCredit: true).ConfigureAwait(false);

            // An empty StreamEnd: completed. Best effort, as the failed one below: on a closed
            // connection the callee cancels the call anyway.
            connection.Outbound.TrySendRawFrame(FrameType.StreamEnd, sender.CallId, ReadOnlySpan<byte>.Empty, sender.IdSpace);
        }
        catch (Exception) when (token.IsCancellationRequested)
        {
            // The call ended, or its caller cancelled it: nothing more to send.
        }
        catch (Exception ex)
        {
            // The producer's failure is how the call ends for its caller, not the cancellation below:
            // a duplex consumer reads what is buffered, then its loop ends with it.
            streams.SendFailure = ex;
            streams.Receiver?.Complete(ex);
            MuxStatusCode code = ex is OperationCanceledException ? MuxStatusCode.Canceled : MuxStatusCode.HandlerFailed;
            connection.Outbound.TrySendError(FrameType.StreamEnd, sender.CallId, code, $"The {connection.SideName}'s stream failed: {ex.GetType().FullName}: {ex.Message}", null, sender.IdSpace);
            CancelQuietly(linked, connection);
        }
    }

    /// <summary>Cancels the call's token, which the caller's producer was given: a callback it
    /// registered there that throws is the producer's own failure, logged (as a handler's is). Thrown
    /// on, it would skip the call's cleanup (its streams' entry, its producer's end) and replace how
    /// the call ended.</summary>
    private static void CancelQuietly(CancellationTokenSource linked, MuxConnection connection)
    {
        try
        {
            linked.Cancel();
        }
        catch (AggregateException ex)
        {
            ConnectionLog.StreamCancellationCallbackFailed(connection.Logger, connection.Name, ex);
        }
    }
}
