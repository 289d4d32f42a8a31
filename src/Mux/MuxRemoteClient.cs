using System.ComponentModel;
using Mux.Connection;
using Mux.Serialization;
using Mux.Server;
using Mux.Streaming;

namespace Mux;

/// <summary>
/// The client at the other end of a server connection, as the server calls it: a handler gets it from its <see cref="MuxCallContext"/>
/// (<see cref="MuxCallContext.Client"/>) and calls the services that client added with
/// <see cref="MuxClient.AddService{TService}(TService)"/> through <see cref="CreateProxy{TService}()"/>, on the same connection. Such calls
/// complete exactly once, like calls the other way: with the result; with <see cref="MuxRemoteException"/> when the client's handler failed
/// or the client has no such service (<see cref="MuxStatusCode.UnknownMethod"/>); with <see cref="TimeoutException"/> after
/// <see cref="MuxServerOptions.ClientCallTimeout"/>; with <see cref="OperationCanceledException"/> when the caller's token fires (the
/// client is told to cancel its handler); or with <see cref="MuxConnectionException"/> when the connection is lost. Methods that take or
/// return an <see cref="IAsyncEnumerable{T}"/> stream both ways, as on calls to a server.
/// </summary>
/// <remarks>
/// The object may be kept after the handler returns (a chat server keeps one per member, to push messages): it stays usable while its
/// connection is open (<see cref="IsConnected"/>), and <see cref="Completion"/> says when it has closed. A client that reconnects is a new
/// connection, and so a new <see cref="MuxRemoteClient"/>.
/// </remarks>
public sealed class MuxRemoteClient : IMuxCallInvoker
{
    private readonly ServerConnection _connection;

    // ClientCallTimeout, or the bound options in its place; a server's call inherits no deadline.
    private readonly CallSettings _settings;

    // Where its streaming calls go: always this connection, never sent again.
    private readonly PeerCallSource _source;

    internal MuxRemoteClient(ServerConnection connection, TimeSpan clientCallTimeout)
        : this(connection, CallSettings.ForServer(connection.TimeProvider, clientCallTimeout))
    {
    }

    private MuxRemoteClient(ServerConnection connection, CallSettings settings)
    {
        _connection = connection;
        _settings = settings;
        _source = new PeerCallSource(connection.Outgoing);
    }

    private byte[]? Metadata => _settings.EncodedMetadata;

    /// <summary>Whether the connection to this client is still open.</summary>
    public bool IsConnected => !_connection.IsClosed;

    /// <summary>Completes when the connection to this client has closed (it never faults).</summary>
    public Task Completion => _connection.Completion;

    /// <summary>Creates a proxy whose methods call this client.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface the client implements (MuxClient.AddService).</typeparam>
    /// <returns>The proxy. Cheap to create; all proxies of this client share its connection.</returns>
    /// <exception cref="InvalidOperationException">No proxy is registered for the interface.</exception>
    public TService CreateProxy<TService>()
        where TService : class
        => MuxServiceRegistry.CreateProxy<TService>(this);

    /// <summary>Creates a proxy whose calls to this client carry <paramref name="options"/>: their <see cref="MuxCallOptions.Metadata"/>
    /// (the client's handler reads it as <see cref="MuxCallContext.Metadata"/>) and <see cref="MuxCallOptions.Timeout"/> (in place of
    /// <see cref="MuxServerOptions.ClientCallTimeout"/>); <see cref="MuxCallOptions.WaitForConnection"/> does not apply (a client's
    /// connection is there or gone). Cheap: the options are checked, copied and their metadata encoded once, here.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface the client implements (MuxClient.AddService).</typeparam>
    /// <param name="options">The settings of the proxy's calls.</param>
    /// <returns>The proxy; its calls travel on this client's connection.</returns>
    /// <exception cref="InvalidOperationException">No proxy is registered for the interface.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><see cref="MuxCallOptions.Timeout"/> is not positive (or
    /// <see cref="Timeout.InfiniteTimeSpan"/>).</exception>
    public TService CreateProxy<TService>(MuxCallOptions options)
        where TService : class
        => MuxServiceRegistry.CreateProxy<TService>(new MuxRemoteClient(_connection, _settings.Bind(options)));

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        CallDeadline deadline = _settings.FixDeadline(0, out long now);
        return _connection.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken, metadata: Metadata);
    }

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        CallDeadline deadline = _settings.FixDeadline(0, out long now);
        return _connection.Outgoing.InvokeAsync(methodId, arguments, deadline, now, cancellationToken, Metadata);
    }

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public IAsyncEnumerable<TResult> InvokeServerStream<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct =>
        OutgoingStreamCall.ReceiveAsync<TArguments, TResult, TResult>(_source, methodId, arguments, null, Metadata, cancellationToken);

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return OutgoingStreamCall.ReceiveAsync<TArguments, TItem, TResult>(_source, methodId, arguments, items, Metadata, cancellationToken);
    }

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return OutgoingStreamCall.SendAsync<TArguments, TItem, TResult>(_source, methodId, arguments, items, Metadata, cancellationToken);
    }

    /// <inheritdoc/>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask InvokeClientStreamAsync<TArguments, TItem>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => VoidResult.Ignore(InvokeClientStreamAsync<TArguments, TItem, VoidResult>(methodId, arguments, items, cancellationToken));
}
