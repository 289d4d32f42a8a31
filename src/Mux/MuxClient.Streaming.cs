using System.ComponentModel;
using Mux.Client;
using Mux.Streaming;

namespace Mux;

// Streaming calls: [MuxService] methods that take or return an IAsyncEnumerable<T>. Proxies call
// these; users call the proxy.
public sealed partial class MuxClient
{
    /// <summary>Calls a method that returns a stream (server streaming). The call starts when the
    /// stream is enumerated; each enumeration is a call of its own.</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter, if any, left out).</typeparam>
    /// <typeparam name="TResult">The type of the items the server streams.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call; so does the enumerator's token.</param>
    /// <returns>The server's items, in order.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public IAsyncEnumerable<TResult> InvokeServerStream<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct =>
        ClientStreamCall.ReceiveAsync<TArguments, TResult, TResult>(this, methodId, arguments, null, cancellationToken);

    /// <summary>Calls a method that takes a stream and returns a stream (duplex): both flow at once.</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter left out).</typeparam>
    /// <typeparam name="TItem">The type of the items the client streams.</typeparam>
    /// <typeparam name="TResult">The type of the items the server streams.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="items">The client's stream, enumerated once the call has started.</param>
    /// <param name="cancellationToken">Cancels the call; so does the enumerator's token.</param>
    /// <returns>The server's items, in order.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return ClientStreamCall.ReceiveAsync<TArguments, TItem, TResult>(this, methodId, arguments, items, cancellationToken);
    }

    /// <summary>Calls a method that takes a stream and returns one value (client streaming).</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter left out).</typeparam>
    /// <typeparam name="TItem">The type of the items the client streams.</typeparam>
    /// <typeparam name="TResult">The method's result type.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="items">The client's stream, enumerated once the call has started.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The result.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return ClientStreamCall.SendAsync<TArguments, TItem, TResult>(this, methodId, arguments, items, cancellationToken);
    }

    /// <summary>Calls a method that takes a stream and returns no value (client streaming).</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter left out).</typeparam>
    /// <typeparam name="TItem">The type of the items the client streams.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="items">The client's stream, enumerated once the call has started.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>A task that completes when the server has run the method.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public async ValueTask InvokeClientStreamAsync<TArguments, TItem>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        await ClientStreamCall.SendAsync<TArguments, TItem, Serialization.VoidResult>(this, methodId, arguments, items, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The connection a streaming call runs on: the current one, or the next one (within
    /// CallTimeout). A streaming call is never retried: its stream cannot be replayed.</summary>
    internal ValueTask<ClientConnection> GetConnectionAsync(CancellationToken cancellationToken) =>
        _keeper.Current is { } connection
            ? new ValueTask<ClientConnection>(connection)
            : _keeper.WaitForConnectionAsync(null, ClockDeadline.After(_clock.GetTimestamp(), _callTimeout), cancellationToken);
}
