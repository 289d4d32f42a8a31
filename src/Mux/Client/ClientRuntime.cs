using System.Net;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Mux.Client.Balancing;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// What a <see cref="MuxClient"/> is made of behind its public face: the source of its connections (one endpoint's
/// <see cref="ConnectionKeeper"/>, or an <see cref="EndPointBalancer"/> over several instances), the services it serves to its server, and
/// what its calls share (their <see cref="CallInvoker"/> is the path of each). Immutable once made.
/// </summary>
internal sealed class ClientRuntime
{
    // Category Mux.Client: for the keeper or balancer and every connection.
    private readonly ILogger _logger;

    // Null in memory and over several instances.
    private readonly EndPoint? _endPoint;

    // The options mapped into the engine once, for every connection the client opens.
    private readonly ConnectionSettings _settings;

    private ClientRuntime(MuxClientOptions options, EndPoint? endPoint)
    {
        options.Validate();
        _settings = ConnectionSettings.ForClient(options);
        _logger = CreateLogger(options);
        Services = new ServiceMethods();
        _endPoint = endPoint;
        CallSettings = CallSettings.ForClient(options);
        Interceptors = [.. options.Interceptors];
        RetryBudget = options.RetryBudget is { } budget ? new RetryBudget(budget, options.TimeProvider) : null;
    }

    // The settings of calls through a plain proxy.
    public CallSettings CallSettings { get; }

    // Outermost first.
    public IMuxClientInterceptor[] Interceptors { get; }

    // Calls the server reported as never run are sent again only within it; null: never.
    public RetryBudget? RetryBudget { get; }

    /// <summary>Calls sent again so far within the retry budget, for the load runner and tests.</summary>
    public long RetriesMade => RetryBudget?.Withdrawn ?? 0;

    // Set once, by the factory that made this runtime, right after the constructor.
    public ConnectionSource Keeper { get; private set; } = null!;

    // What the client serves to its server's calls (MuxClient.AddService), on every connection it opens.
    public ServiceMethods Services { get; }

    // The server's socket address once connected, else the configured endpoint.
    public EndPoint? RemoteEndPoint => _endPoint is null ? null : Keeper.Latest?.RemoteEndPoint ?? _endPoint;

    /// <summary>A client whose first connection is open: the keeper reconnects to the same endpoint when it is lost.</summary>
    public static async Task<ClientRuntime> ConnectAsync(EndPoint endPoint, MuxClientOptions options, CancellationToken cancellationToken)
    {
        var runtime = new ClientRuntime(options, endPoint);
        ClientConnection first = await ClientConnection.OpenAsync(
            endPoint, options, runtime._settings, runtime.Services, runtime._logger, cancellationToken).ConfigureAwait(false);
        runtime.Keeper = runtime.KeeperOf(first, endPoint, options, endPoint.ToString() ?? "server");
        return runtime;
    }

    /// <summary>A client that connects to <paramref name="endPoint"/> in the background.</summary>
    public static ClientRuntime Create(EndPoint endPoint, MuxClientOptions options)
    {
        var runtime = new ClientRuntime(options, endPoint);
        runtime.Keeper = runtime.KeeperOf(null, endPoint, options, endPoint.ToString() ?? "server");
        return runtime;
    }

    /// <summary>A client over a transport opened by the caller (a stream, a pipe, in-memory pipes): it cannot reconnect. The handshake
    /// waits until
    /// <paramref name="deadline"/> (by default ConnectTimeout from now).</summary>
    public static async Task<ClientRuntime> ConnectAsync(
        IMuxTransport transport, MuxClientOptions options, string name, CancellationToken cancellationToken, long? deadline = null)
    {
        var runtime = new ClientRuntime(options, null);
        ClientConnection connection = await ClientConnection.ConnectAsync(
            transport, options, runtime._settings, runtime.Services, runtime._logger, name, cancellationToken, deadline).ConfigureAwait(false);
        runtime.Keeper = runtime.KeeperOf(connection, null, options, name);
        return runtime;
    }

    /// <summary>A client over several instances, each connecting in the background.</summary>
    public static ClientRuntime CreateBalanced(MuxClientOptions options)
    {
        var runtime = new ClientRuntime(options, null);
        runtime.Keeper = new EndPointBalancer(options, runtime._settings, runtime.Services, runtime._logger, runtime.RaiseStateChanged);
        return runtime;
    }

    /// <summary>A client over several instances, once one is connected (within ConnectTimeout).</summary>
    public static async Task<ClientRuntime> ConnectBalancedAsync(MuxClientOptions options, CancellationToken cancellationToken)
    {
        ClientRuntime runtime = CreateBalanced(options);
        try
        {
            long deadline = ClockDeadline.After(options.TimeProvider, options.ConnectTimeout);
            await ((EndPointBalancer)runtime.Keeper).WaitUntilConnectedAsync(deadline, cancellationToken).ConfigureAwait(false);
            return runtime;
        }
        catch
        {
            await runtime.Keeper.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    // Guarded: a logger that throws loses its entry, never the reconnect loop or a call.
    public static ILogger CreateLogger(MuxClientOptions options) =>
        GuardedLogger.Wrap((options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger("Mux.Client"));

    // MuxClient.StateChanged: set once, by the MuxClient made over this runtime. A change before that has nobody to see it.
    public Action<MuxClientState, MuxClientState, Exception?>? StateChanged { get; set; }

    private ConnectionKeeper KeeperOf(ClientConnection? first, EndPoint? endPoint, MuxClientOptions options, string name) =>
        new(first, endPoint, _settings, Services, options, _logger, name, RaiseStateChanged);

    private void RaiseStateChanged(MuxClientState previous, MuxClientState state, Exception? error) =>
        StateChanged?.Invoke(previous, state, error);
}
