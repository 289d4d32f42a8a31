using System.ComponentModel;

namespace Mux;

/// <summary>
/// What a generated proxy sends its calls through: a <see cref="MuxClient"/> (calls to a server), or a <see cref="MuxRemoteClient"/> (calls
/// from a server handler to the client that called it). Generated code's plumbing: users call the proxy.
/// </summary>
[EditorBrowsable(EditorBrowsableState.Never)]
public interface IMuxCallInvoker
{
    /// <summary>Calls a method by id and returns its result; completes exactly once (see
    /// <see cref="MuxClient.InvokeAsync{TArguments, TResult}(uint, in TArguments, CancellationToken)"/>).</summary>
    /// <typeparam name="TArguments">The argument list: a struct whose generated formatter writes it as a MessagePack array.</typeparam>
    /// <typeparam name="TResult">The method's result type.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call; the other side is told to cancel its handler.</param>
    /// <returns>The result.</returns>
    ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct;

    /// <summary>Calls a method that returns no value; completes like
    /// <see cref="InvokeAsync{TArguments, TResult}(uint, in TArguments, CancellationToken)"/>.</summary>
    /// <typeparam name="TArguments">The argument list: a struct whose generated formatter writes it as a MessagePack array.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call; the other side is told to cancel its handler.</param>
    /// <returns>A task that completes when the other side has run the method.</returns>
    ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct;

    /// <summary>Calls a method that returns a stream (callee streaming). The call starts when the stream is enumerated; each enumeration is
    /// a call of its own.</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter, if any, left out).</typeparam>
    /// <typeparam name="TResult">The type of the items the other side streams.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call; so does the enumerator's token.</param>
    /// <returns>The other side's items, in order.</returns>
    IAsyncEnumerable<TResult> InvokeServerStream<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct;

    /// <summary>Calls a method that takes a stream and returns a stream (duplex): both flow at once.</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter left out).</typeparam>
    /// <typeparam name="TItem">The type of the items this side streams.</typeparam>
    /// <typeparam name="TResult">The type of the items the other side streams.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="items">This side's stream, enumerated once the call has started.</param>
    /// <param name="cancellationToken">Cancels the call; so does the enumerator's token.</param>
    /// <returns>The other side's items, in order.</returns>
    IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct;

    /// <summary>Calls a method that takes a stream and returns one value (caller streaming).</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter left out).</typeparam>
    /// <typeparam name="TItem">The type of the items this side streams.</typeparam>
    /// <typeparam name="TResult">The method's result type.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="items">This side's stream, enumerated once the call has started.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The result.</returns>
    ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct;

    /// <summary>Calls a method that takes a stream and returns no value (caller streaming).</summary>
    /// <typeparam name="TArguments">The argument list (the stream parameter left out).</typeparam>
    /// <typeparam name="TItem">The type of the items this side streams.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="items">This side's stream, enumerated once the call has started.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>A task that completes when the other side has run the method.</returns>
    ValueTask InvokeClientStreamAsync<TArguments, TItem>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct;
}
