using System.Net;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Mux.Client.Balancing;
using Mux.Connection;
using Mux.Streaming;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// What a <see cref="MuxClient"/> is made of behind its public face: the source of its connections
/// (one endpoint's <see cref="ConnectionKeeper"/>, or an <see cref="EndPointBalancer"/> over
/// several instances), the services it serves to its server, and the path of each call (its
/// deadline fixed once, the wait for a connection, the resend of a call the server never ran:
/// ClientRuntime.Calls.cs).
/// </summary>
internal sealed partial class ClientRuntime
{
    // The clock calls' deadlines are fixed and kept on (MuxClientOptions.TimeProvider), and
    // CallTimeout in its timestamp units (ClockDeadline.Never for none). Immutable.
    private readonly TimeProvider _clock;
    private readonly long _callTimeout;

    // CallTimeout as the options gave it, for MuxClientCall.Timeout. Immutable.
    private readonly TimeSpan _callTimeoutSpan;

    // MuxClientOptions.WaitForConnection: whether calls made while no connection is up wait for
    // one. Immutable.
    private readonly bool _waitForConnection;

    // MuxClientOptions.Interceptors as the client was created, outermost first; empty for a client
    // without any, whose calls then never look at them again. Immutable.
    private readonly IMuxClientInterceptor[] _interceptors;

    // Where a streaming call with the client's own settings finds its connection. Immutable.
    private readonly IOutgoingCallsSource _defaultSource;

    // The client's log (category Mux.Client), for its keeper or balancer and every connection. Immutable.
    private readonly ILogger _logger;

    // The one endpoint the client connects to; null in memory and over several instances. Immutable.
    private readonly EndPoint? _endPoint;

    private ClientRuntime(MuxClientOptions options, EndPoint? endPoint)
    {
        options.Validate();
        _logger = CreateLogger(options);
        Services = new ServiceMethods();
        _endPoint = endPoint;
        _clock = options.TimeProvider;
        _callTimeout = ClockDeadline.ToTimestampSpan(_clock, options.CallTimeout);
        _callTimeoutSpan = options.CallTimeout;
        _waitForConnection = options.WaitForConnection;
        _interceptors = [.. options.Interceptors];
        _defaultSource = new CallsSource(this, _callTimeout, null, _waitForConnection);
    }

    /// <summary>Where the client's connections come from: one endpoint's ConnectionKeeper, or an
    /// EndPointBalancer over several instances. Set once, by the factory that made this runtime,
    /// right after the constructor (either starts at once).</summary>
    public ConnectionSource Keeper { get; private set; } = null!;

    /// <summary>What the client serves to calls its server starts (MuxClient.AddService); shared by
    /// every connection it opens, and kept across reconnects.</summary>
    public ServiceMethods Services { get; }

    /// <summary>The server's socket address once connected, else the configured endpoint; null in
    /// memory and over several instances.</summary>
    public EndPoint? RemoteEndPoint => _endPoint is null ? null : Keeper.Latest?.RemoteEndPoint ?? _endPoint;

    /// <summary>A client whose first connection (to <paramref name="endPoint"/>) is open: the keeper
    /// reconnects to the same endpoint when it is lost.</summary>
    public static async Task<ClientRuntime> ConnectAsync(EndPoint endPoint, MuxClientOptions options, CancellationToken cancellationToken)
    {
        var runtime = new ClientRuntime(options, endPoint);
        ClientConnection first = await ClientConnection.OpenAsync(endPoint, options, runtime.Services, runtime._logger, cancellationToken).ConfigureAwait(false);
        runtime.Keeper = new ConnectionKeeper(first, endPoint, runtime.Services, options, runtime._logger, endPoint.ToString() ?? "server", runtime.RaiseStateChanged);
        return runtime;
    }

    /// <summary>A client that connects to <paramref name="endPoint"/> in the background.</summary>
    public static ClientRuntime Create(EndPoint endPoint, MuxClientOptions options)
    {
        var runtime = new ClientRuntime(options, endPoint);
        runtime.Keeper = new ConnectionKeeper(null, endPoint, runtime.Services, options, runtime._logger, endPoint.ToString() ?? "server", runtime.RaiseStateChanged);
        return runtime;
    }

    /// <summary>A client over a transport opened by the caller (a stream, a pipe, in-memory pipes
    /// in tests and benchmarks): it cannot reconnect. The handshake waits until
    /// <paramref name="deadline"/> (by default ConnectTimeout from now).</summary>
    public static async Task<ClientRuntime> ConnectAsync(IMuxTransport transport, MuxClientOptions options, string name, CancellationToken cancellationToken, long? deadline = null)
    {
        var runtime = new ClientRuntime(options, null);
        ClientConnection connection = await ClientConnection.ConnectAsync(transport, options, runtime.Services, runtime._logger, name, cancellationToken, deadline).ConfigureAwait(false);
        runtime.Keeper = new ConnectionKeeper(connection, null, runtime.Services, options, runtime._logger, name, runtime.RaiseStateChanged);
        return runtime;
    }

    /// <summary>A client over several instances (<see cref="MuxClientOptions.EndPoints"/>,
    /// <see cref="MuxClientOptions.EndPointResolver"/>), each connecting in the background.</summary>
    public static ClientRuntime CreateBalanced(MuxClientOptions options)
    {
        var runtime = new ClientRuntime(options, null);
        runtime.Keeper = new EndPointBalancer(options, runtime._logger, runtime.RaiseStateChanged, runtime.Services);
        return runtime;
    }

    /// <summary>A client over several instances that returns once one is connected (within
    /// ConnectTimeout); the others keep connecting in the background.</summary>
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

    /// <summary>The client's logger, guarded: a logger that throws loses its entry, never the
    /// reconnect loop or a call (see GuardedLogger).</summary>
    public static ILogger CreateLogger(MuxClientOptions options) =>
        GuardedLogger.Wrap((options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger("Mux.Client"));

    /// <summary>Where changes of the client's state go (MuxClient.StateChanged): set by the
    /// MuxClient made over this runtime, once. A change before that has nobody to see it.</summary>
    public Action<MuxClientState, MuxClientState, Exception?>? StateChanged { get; set; }

    private void RaiseStateChanged(MuxClientState previous, MuxClientState state, Exception? error) =>
        StateChanged?.Invoke(previous, state, error);
}
