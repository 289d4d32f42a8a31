using Mux.Connection;
using Mux.Serialization;

namespace Mux.Client;

/// <summary>
/// The one way in for a client's calls of all six shapes: the client's call path, with a bound proxy's
/// <see cref="CallSettings"/> or none. MuxClient forwards to its own; a bound proxy gets one of its own.
/// </summary>
internal sealed class CallInvoker(ClientRuntime runtime, CallSettings? settings) : IMuxCallInvoker
{
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => runtime.InvokeAsync<TArguments, TResult>(methodId, arguments, settings, cancellationToken);

    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => runtime.InvokeAsync(methodId, arguments, settings, cancellationToken);

    public IAsyncEnumerable<TResult> InvokeServerStream<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => runtime.ReceiveStream<TArguments, TResult, TResult>(methodId, arguments, null, settings, cancellationToken);

    public IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return runtime.ReceiveStream<TArguments, TItem, TResult>(methodId, arguments, items, settings, cancellationToken);
    }

    public ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return runtime.SendStreamAsync<TArguments, TItem, TResult>(methodId, arguments, items, settings, cancellationToken);
    }

    public ValueTask InvokeClientStreamAsync<TArguments, TItem>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => VoidResult.Ignore(InvokeClientStreamAsync<TArguments, TItem, VoidResult>(methodId, arguments, items, cancellationToken));
}
