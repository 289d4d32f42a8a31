using System.ComponentModel;
using Mux.Server;

namespace Mux;

/// <summary>
/// The client at the other end of a server connection, as the server calls it: a handler gets it
/// from its <see cref="MuxCallContext"/> (<see cref="MuxCallContext.Client"/>) and calls the
/// services that client added with <see cref="MuxClient.AddService{TService}(TService)"/> through
/// <see cref="CreateProxy{TService}"/>, on the same connection. Such calls complete exactly once,
/// like calls the other way: with the result; with <see cref="MuxRemoteException"/> when the
/// client's handler failed or the client has no such service
/// (<see cref="MuxStatusCode.UnknownMethod"/>); with <see cref="TimeoutException"/> after
/// <see cref="MuxServerOptions.ClientCallTimeout"/>; with <see cref="OperationCanceledException"/>
/// when the caller's token fires (the client is told to cancel its handler); or with
/// <see cref="MuxConnectionException"/> when the connection is lost.
/// </summary>
/// <remarks>
/// The object may be kept after the handler returns (a chat server keeps one per member, to push
/// messages): it stays usable while its connection is open (<see cref="IsConnected"/>), and
/// <see cref="Completion"/> says when it has closed. A client that reconnects is a new connection,
/// and so a new <see cref="MuxRemoteClient"/>.
/// </remarks>
public sealed class MuxRemoteClient : IMuxCallInvoker
{
    private readonly ServerConnection _connection;

    internal MuxRemoteClient(ServerConnection connection)
    {
        _connection = connection;
    }

    /// <summary>Whether the connection to this client is still open.</summary>
    public bool IsConnected => !_connection.IsClosed;

    /// <summary>Completes when the connection to this client has closed (it never faults).</summary>
    public Task Completion => _connection.Completion;

    /// <summary>Creates a proxy whose methods call this client.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface the client
    /// implements (MuxClient.AddService).</typeparam>
    /// <returns>The proxy. Cheap to create; all proxies of this client share its connection.</returns>
    /// <exception cref="InvalidOperationException">No proxy is registered for the interface.</exception>
    public TService CreateProxy<TService>()
        where TService : class
        => MuxServiceRegistry.CreateProxy<TService>(this);

    /// <summary>Calls a method of the client by id and returns its result. This is what proxies
    /// call; use a proxy instead. Completes as the class describes.</summary>
    /// <typeparam name="TArguments">The argument list: a struct whose generated formatter writes it as a MessagePack array.</typeparam>
    /// <typeparam name="TResult">The method's result type.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The result.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => _connection.InvokeClientAsync<TArguments, TResult>(methodId, arguments, cancellationToken);

    /// <summary>Calls a method of the client that returns no value; completes as the class describes.</summary>
    /// <typeparam name="TArguments">The argument list: a struct whose generated formatter writes it as a MessagePack array.</typeparam>
    /// <param name="methodId">The method's wire id.</param>
    /// <param name="arguments">The arguments.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>A task that completes when the client has run the method.</returns>
    [EditorBrowsable(EditorBrowsableState.Never)] // Proxies call it; users call the proxy.
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => _connection.InvokeClientAsync(methodId, arguments, cancellationToken);
}
