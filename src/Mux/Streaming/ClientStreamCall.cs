using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Mux.Client;
using Mux.Serialization;

namespace Mux.Streaming;

/// <summary>
/// A streaming call on the client. One call carries the streams: its Request starts it, items flow
/// both ways as StreamItem frames within each consumer's credit, the client's stream ends with
/// StreamEnd and the server's with the call's Response (or Error). So a stream ends exactly once,
/// as a call does, also when the connection is lost. The call's token is linked to the caller's:
/// a consumer that stops early, a caller that cancels and a client producer that fails all cancel
/// the call, which sends Cancel and ends the server's side.
/// </summary>
internal static class ClientStreamCall
{
    /// <summary>Server or duplex streaming: enumerates the server's items, sending
    /// <paramref name="items"/> (when not null) at the same time.</summary>
    public static async IAsyncEnumerable<TResult> ReceiveAsync<TArguments, TItem, TResult>(
        MuxClient client, uint methodId, TArguments arguments, IAsyncEnumerable<TItem>? items, [EnumeratorCancellation] CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await client.GetConnectionAsync(cancellationToken).ConfigureAwait(false);
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var receiver = new StreamReceiver(connection, connection.StreamWindow);
        var streams = new CallStreams(receiver, items is null ? null : new StreamSendWindow(0));
        Task pump = Task.CompletedTask;
        try
        {
            ValueTask<VoidResult> call = connection.InvokeAsync<TArguments, VoidResult>(methodId, arguments, CallDeadline.None, 0, linked.Token, streams);
            _ = EndWhenCallEndsAsync(call, receiver);
            if (items is not null)
            {
                pump = PumpAsync(connection, streams, items, linked);
            }

            while (await receiver.WaitToReadAsync(cancellationToken).ConfigureAwait(false))
            {
                while (receiver.TryRead(connection.SerializerOptions, out TResult? item))
                {
                    // Buffered items too stop at a cancellation: the loop ends where the caller cancelled.
                    cancellationToken.ThrowIfCancellationRequested();
                    yield return item!;
                }
            }

            ThrowSendFailure(streams);
            ThrowEnd(receiver);
        }
        finally
        {
            // A consumer that stops early (or fails) cancels the call: the server's producer stops.
            linked.Cancel();
            connection.UnregisterStreams(streams);
            receiver.Abandon();
            await pump.ConfigureAwait(false);
        }
    }

    /// <summary>Client streaming: sends <paramref name="items"/> and returns the server's result.</summary>
    public static async ValueTask<TResult> SendAsync<TArguments, TItem, TResult>(
        MuxClient client, uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await client.GetConnectionAsync(cancellationToken).ConfigureAwait(false);
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var streams = new CallStreams(null, new StreamSendWindow(0));
        Task pump = Task.CompletedTask;
        try
        {
            ValueTask<TResult> call = connection.InvokeAsync<TArguments, TResult>(methodId, arguments, CallDeadline.None, 0, linked.Token, streams);
            pump = PumpAsync(connection, streams, items, linked);
            return await call.ConfigureAwait(false);
        }
        catch (Exception) when (streams.SendFailure is not null)
        {
            // The producer failed first: whatever the call then ended with (its cancellation, or
            // the handler's failure on reading the failed stream) follows from that.
            ThrowSendFailure(streams);
            throw;
        }
        finally
        {
            // The server answered (perhaps before reading everything): stop the client's producer.
            linked.Cancel();
            connection.UnregisterStreams(streams);
            await pump.ConfigureAwait(false);
        }
    }

    /// <summary>Ends the server's stream when the call ends: its Response (or Error) comes after
    /// its last item on the connection, so every item is buffered by then.</summary>
    private static async Task EndWhenCallEndsAsync(ValueTask<VoidResult> call, StreamReceiver receiver)
    {
        try
        {
            await call.ConfigureAwait(false);
            receiver.Complete(null);
        }
        catch (Exception ex)
        {
            receiver.Complete(ex);
        }
    }

    /// <summary>Sends the client's items within the server's credit, then StreamEnd. Never throws:
    /// a producer that fails records why, tells the server (StreamEnd with an error) and cancels
    /// the call; a call that ends first (<paramref name="linked"/> cancelled) just stops it.</summary>
    private static async Task PumpAsync<TItem>(ClientConnection connection, CallStreams streams, IAsyncEnumerable<TItem> items, CancellationTokenSource linked)
    {
        CancellationToken token = linked.Token;
        try
        {
            // Nothing of the stream, StreamEnd included, may go out before the Request is out whole
            // (in fragments, a few writer turns after the call started): the window opens only
            // then. The credit taken here is the first item's.
            await streams.Sender!.WaitAsync(token).ConfigureAwait(false);
            await StreamProducer.SendAsync(connection, items, streams.Sender, connection.SerializerOptions, token, holdsCredit: true).ConfigureAwait(false);
            connection.SendStreamEnd(streams.CallId, MuxStatusCode.Ok, null);
        }
        catch (Exception) when (token.IsCancellationRequested)
        {
            // The call ended, or its caller cancelled it: nothing more to send.
        }
        catch (Exception ex)
        {
            streams.SendFailure = ex;
            MuxStatusCode code = ex is OperationCanceledException ? MuxStatusCode.Canceled : MuxStatusCode.HandlerFailed;
            connection.SendStreamEnd(streams.CallId, code, $"The client's stream failed: {ex.GetType().FullName}: {ex.Message}");
            linked.Cancel();
        }
    }

    private static void ThrowSendFailure(CallStreams streams)
    {
        if (streams.SendFailure is { } failure)
        {
            ExceptionDispatchInfo.Throw(failure);
        }
    }

    /// <summary>Throws why the server's stream ended, if it failed. A server that cancelled its
    /// producer ends the consumer's loop with OperationCanceledException, as a cancellation here does.</summary>
    private static void ThrowEnd(StreamReceiver receiver)
    {
        try
        {
            receiver.ThrowIfFailed();
        }
        catch (MuxRemoteException remote) when (remote.StatusCode == MuxStatusCode.Canceled)
        {
            throw new OperationCanceledException(remote.Message, remote);
        }
    }
}
