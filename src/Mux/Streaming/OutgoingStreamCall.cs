using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Streaming;

/// <summary>The caller's side of a streaming call, on either side. The caller's stream ends with StreamEnd and the callee's with the call's
/// Response or Error, so a stream ends exactly once, as a call does. A consumer that stops early, a caller that cancels and a caller's
/// producer that fails all cancel the call, which sends Cancel and ends the callee's side.</summary>
internal static class OutgoingStreamCall
{
    /// <summary>Callee or duplex streaming: enumerates the callee's items while it sends <paramref name="items"/>, if any.</summary>
    public static async IAsyncEnumerable<TResult> ReceiveAsync<TArguments, TItem, TResult>(
        CallSource source, uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, byte[]? metadata,
        [EnumeratorCancellation] CancellationToken cancellationToken)
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
            ValueTask<VoidResult> call =
                calls.InvokeAsync<TArguments, VoidResult>(methodId, arguments, CallDeadline.None, 0, linked.Token, streams, metadata);
            _ = EndWhenCallEndsAsync(call, receiver, source);
            if (items is not null)
            {
                pump = PumpAsync(connection, streams, items, linked);
            }

            while (await receiver.WaitToReadAsync(cancellationToken).ConfigureAwait(false))
            {
                while (receiver.TryRead(out TResult? item))
                {
                    // Buffered items too: the loop ends where the caller cancelled.
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
        CallSource source, uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, byte[]? metadata,
        CancellationToken cancellationToken)
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
            ValueTask<TResult> call =
                calls.InvokeAsync<TArguments, TResult>(methodId, arguments, CallDeadline.None, 0, linked.Token, streams, metadata);
            pump = PumpAsync(connection, streams, items, linked);
            return await call.ConfigureAwait(false);
        }
        catch (Exception) when (streams.SendFailure is { } failure)
        {
            // The producer failed first: whatever the call then ended with follows from that.
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

    /// <summary>The call's Response or Error comes after its last item, so every item is buffered by then. A callee that cancelled its
    /// producer ends the consumer's loop with OperationCanceledException, as a cancellation here does.</summary>
    private static async Task EndWhenCallEndsAsync(ValueTask<VoidResult> call, StreamReceiver receiver, CallSource source)
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

    /// <summary>Sends the caller's items within the callee's credit, then StreamEnd. Never throws: a producer that fails records why, tells
    /// the callee (StreamEnd with an error) and cancels the call; a call that ends first just stops it.</summary>
    private static async Task PumpAsync<TItem>(
        MuxConnection connection, CallStreams streams, IAsyncEnumerable<TItem> items, CancellationTokenSource linked)
    {
        CancellationToken token = linked.Token;
        StreamSendWindow sender = streams.Sender!;
        try
        {
            // Nothing of the stream, StreamEnd included, may go out before the Request is out whole (in fragments, a few writer turns after
            // the call started): the window opens only then. The credit taken here is the first item's.
            await sender.WaitAsync(token).ConfigureAwait(false);
            await StreamProducer.SendAsync(connection, items, sender, token, holdsCredit: true).ConfigureAwait(false);

            // Completed. Best effort, as the failed one below: on a closed connection the callee cancels the call anyway.
            connection.Outbound.TrySendRawFrame(FrameType.StreamEnd, sender.CallId, ReadOnlySpan<byte>.Empty, sender.IdSpace);
        }
        catch (Exception) when (token.IsCancellationRequested)
        {
            // The call ended, or its caller cancelled it: nothing more to send.
        }
        catch (Exception ex)
        {
            // How the call ends for its caller, not the cancellation below: a duplex consumer reads what is buffered, then this.
            streams.SendFailure = ex;
            streams.Receiver?.Complete(ex);
            MuxStatusCode code = ex is OperationCanceledException ? MuxStatusCode.Canceled : MuxStatusCode.HandlerFailed;
            string message = $"The {connection.SideName}'s stream failed: {ex.GetType().FullName}: {ex.Message}";
            connection.Outbound.TrySendError(FrameType.StreamEnd, sender.CallId, code, message, null, sender.IdSpace);
            CancelQuietly(linked, connection);
        }
    }

    // A callback the producer registered that throws is its own failure, logged: thrown on, it would skip the call's cleanup.
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
