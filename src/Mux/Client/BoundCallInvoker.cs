using Mux.Connection;
using Mux.Serialization;

namespace Mux.Client;

/// <summary>
/// What a proxy made by <see cref="MuxClient.CreateProxy{TService}(MuxCallOptions)"/> sends its
/// calls through: the client's own call path, with the proxy's <see cref="CallSettings"/>. The
/// generated proxy is the same one a plain proxy is; only its invoker differs. A plain proxy's
/// streaming calls come here too, with no settings (MuxClient forwards them). Immutable.
/// </summary>
internal sealed class BoundCallInvoker(ClientRuntime runtime, CallSettings? settings) : IMuxCallInvoker
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

    public IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return runtime.ReceiveStream<TArguments, TItem, TResult>(methodId, arguments, items, settings, cancellationToken);
    }

    public ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return runtime.SendStreamAsync<TArguments, TItem, TResult>(methodId, arguments, items, settings, cancellationToken);
    }

    public ValueTask InvokeClientStreamAsync<TArguments, TItem>(uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => VoidResult.Ignore(InvokeClientStreamAsync<TArguments, TItem, VoidResult>(methodId, arguments, items, cancellationToken));
}
