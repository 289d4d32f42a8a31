using System.ComponentModel;
using Mux.Connection;

namespace Mux;

/// <summary>
/// One call being served: a <see cref="MuxMethodHandler{TService}"/> reads the arguments, invokes the service and hands
/// the result to a <c>ReturnAsync</c> method. Runs on the thread pool, never on the reader loop, so a slow handler
/// delays only its own call. Valid until the handler's task completes: the object is then reused for a later request
/// (the <see cref="CancellationToken"/> a handler took stays its own call's).
/// </summary>
public sealed class MuxServerCall
{
    private readonly IncomingCall _call;

    internal MuxServerCall(IncomingCall call) => _call = call;

    /// <summary>The call's id on its connection.</summary>
    public uint CallId => _call.CallId;

    /// <summary>The id of the method being called.</summary>
    public uint MethodId => _call.MethodId;

    /// <summary>"Service.Method" of the method being called.</summary>
    public string MethodName => _call.MethodName;

    /// <summary>
    /// Made on first use: a generated dispatcher asks for it only for a method that declares a
    /// <see cref="MuxCallContext"/> parameter. Valid until the handler's task completes.
    /// </summary>
    public MuxCallContext Context => _call.Context;

    /// <summary>
    /// Cancelled when the caller gives up, at its <see cref="MuxCallContext.Deadline"/>, when the connection is lost, or
    /// when the server stops without waiting for the call. Read it while the handler runs. Each call has a token of its
    /// own, which work the handler leaves running may keep: it never fires for a later call.
    /// </summary>
    public CancellationToken CancellationToken => _call.CancellationToken;

    /// <summary>
    /// Reads the request's argument list with the server's serializer options. A request whose arguments cannot be read
    /// fails with <see cref="MuxStatusCode.InvalidArguments"/>; the connection stays up.
    /// </summary>
    /// <typeparam name="TArguments">The method's argument list: generated code passes the struct it
    /// generated, whose formatter the generated resolver provides.</typeparam>
    /// <returns>The arguments.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public TArguments ReadArguments<TArguments>() => _call.ReadArguments<TArguments>();

    /// <summary>Sends the result of a method returning <see cref="ValueTask{TResult}"/> once it completes.</summary>
    /// <typeparam name="T">The result type.</typeparam>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync<T>(ValueTask<T> result) => _call.ReturnAsync(result);

    /// <summary>Sends the result of a method returning <see cref="Task{TResult}"/> once it completes.</summary>
    /// <typeparam name="T">The result type.</typeparam>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync<T>(Task<T> result) => result is null ? throw _call.NullTask() : _call.ReturnAsync(new ValueTask<T>(result));

    /// <summary>Sends the (empty) result of a method returning <see cref="ValueTask"/> once it completes.</summary>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync(ValueTask result) => _call.ReturnAsync(result);

    /// <summary>Sends the (empty) result of a method returning <see cref="Task"/> once it completes.</summary>
    /// <param name="result">What the service method returned.</param>
    /// <returns>A task that completes when the response has been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnAsync(Task result) => result is null ? throw _call.NullTask() : _call.ReturnAsync(new ValueTask(result));

    /// <summary>The caller's stream for a handler's <see cref="IAsyncEnumerable{T}"/> parameter. It throws
    /// <see cref="MuxRemoteException"/> when the caller's producer failed, and <see cref="OperationCanceledException"/>
    /// when the call is cancelled or its connection lost. Call it before the service method, as generated dispatchers
    /// do: a handler that returns without having opened the caller's stream takes none, and its items are dropped.</summary>

    /// <typeparam name="T">The item type.</typeparam>
    /// <returns>The caller's stream.</returns>
    /// <exception cref="InvalidOperationException">The call has finished, or its handler returned
    /// before it opened the caller's stream.</exception>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public IAsyncEnumerable<T> ReadStream<T>() => _call.ReadStream<T>();

    /// <summary>Streams the items of a method returning <see cref="IAsyncEnumerable{T}"/> to the
    /// caller, each within the credit the caller granted, then ends the call. The enumeration's
    /// token is the call's: it fires when the caller cancels or stops reading.</summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <param name="items">What the service method returned.</param>
    /// <returns>A task that completes when the last item and the end of the stream have been handed to the connection.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers call it.
    public ValueTask ReturnStreamAsync<T>(IAsyncEnumerable<T> items) => _call.ReturnStreamAsync(items);
}
