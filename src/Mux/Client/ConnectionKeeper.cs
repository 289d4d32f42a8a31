using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// Keeps a <see cref="MuxClient"/> connected. One background loop owns the connection's life:
/// it connects (with backoff), publishes the connection to callers, waits until the connection
/// closes or the server sends GoAway, and starts over. Callers read <see cref="Current"/> without
/// a lock on every call; only a caller that finds no usable connection waits, on
/// <see cref="WaitForConnectionAsync"/>.
/// </summary>
/// <remarks>
/// Without a way to open a new connection (a client over a given transport), or with
/// <see cref="MuxClientOptions.AutoReconnect"/> off, the keeper never replaces its connection: a
/// lost connection closes the client, and calls fail on it exactly as they would without a keeper.
/// </remarks>
internal sealed class ConnectionKeeper : IConnectionSource
{
    private readonly Func<CancellationToken, Task<ClientConnection>>? _open;
    private readonly MuxClientOptions _options;
    private readonly ILogger _logger;
    private readonly string _server;
    private readonly Action<MuxClientState, MuxClientState, Exception?> _onStateChanged;

    // Cancelled by DisposeAsync: stops the loop, a connect attempt and its backoff.
    private readonly CancellationTokenSource _disposing = new();

    // Completed when the client is closed for good (Completion).
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Guards _current, _ready, _replaceNow, _retired and _disposed together. Taken on the slow
    // paths only (connection published or retired, a caller that must wait, dispose).
    private readonly Lock _lock = new();

    // The connection new calls go to; null while (re)connecting. Written under _lock by the loop
    // (publish), by Retire (any thread) and by DisposeAsync; read without a lock by every call.
    private volatile ClientConnection? _current;

    // Completed with the next published connection; a fresh one replaces it whenever the current
    // connection is retired, and it is failed when the client closes. Guarded by _lock.
    private TaskCompletionSource<ClientConnection> _ready = NewReady();

    // Wakes the loop when the current connection is retired before it has closed (GoAway).
    // Guarded by _lock; replaced for each published connection.
    private TaskCompletionSource _replaceNow = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Connections retired while still open (draining after GoAway): disposed with the client.
    private readonly List<ClientConnection> _retired = [];

    private bool _disposed;

    // Why the newest connect attempt failed; null after a success. Written by the loop, read by
    // callers that give up waiting (for their message).
    private volatile Exception? _lastConnectError;

    // The newest connection ever published; kept after it closes for CloseReason and statistics.
    private volatile ClientConnection? _latest;

    // Written by the loop only.
    private volatile int _state = (int)MuxClientState.Connecting;
    private readonly Task _loop;

    /// <summary>Starts the keeper: from <paramref name="first"/> when ConnectAsync already
    /// connected, else connecting in the background (calls wait for its first connection).</summary>
    public ConnectionKeeper(ClientConnection? first, Func<CancellationToken, Task<ClientConnection>>? open, MuxClientOptions options, ILogger logger, string server, Action<MuxClientState, MuxClientState, Exception?> onStateChanged)
    {
        _open = open;
        _options = options;
        _logger = logger;
        _server = server;
        _onStateChanged = onStateChanged;
        Reconnects = open is not null && options.AutoReconnect;
        _loop = RunAsync(first);
    }

    /// <summary>Whether lost connections are replaced (and calls that never ran are retried).</summary>
    public bool Reconnects { get; }

    public MuxClientState State => (MuxClientState)_state;

    /// <summary>Completes when the client is closed for good.</summary>
    public Task Completion => _closed.Task;

    /// <summary>The newest connection, open or not; null before the first one.</summary>
    public ClientConnection? Latest => _latest;

    /// <summary>
    /// The connection for a new call, or null when the caller must wait. When the keeper
    /// reconnects, a connection that closed or received GoAway is retired here by the first caller
    /// that notices, so the next callers wait for its replacement instead of failing on it.
    /// </summary>
    public ClientConnection? Current
    {
        get
        {
            ClientConnection? connection = _current;
            if (connection is null || connection.IsUsable || !Reconnects)
            {
                return connection;
            }

            Retire(connection);
            return null;
        }
    }

    /// <summary>
    /// Waits for a usable connection other than <paramref name="failed"/> (the one a call just
    /// failed on, without running), until <paramref name="deadline"/> (a <see cref="ClockDeadline"/>
    /// on the options' TimeProvider).
    /// </summary>
    /// <exception cref="MuxConnectionException">No connection came in time (safe to retry), or the client is closed.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> fired.</exception>
    public async ValueTask<ClientConnection> WaitForConnectionAsync(ClientConnection? failed, long deadline, TimeSpan? ownTimeout, CancellationToken cancellationToken)
    {
        while (true)
        {
            Task<ClientConnection> ready;
            lock (_lock)
            {
                ClientConnection? connection = _current;
                if (connection is not null)
                {
                    if (connection != failed && (connection.IsUsable || !Reconnects))
                    {
                        return connection;
                    }

                    RetireLocked(connection);
                }

                ready = _ready.Task;
            }

            if (!ClockDeadline.TryGetRemaining(_options.TimeProvider, deadline, out TimeSpan wait))
            {
                throw NoConnectionInTime(ownTimeout);
            }

            try
            {
                failed = await ready.WaitAsync(wait, _options.TimeProvider, cancellationToken).ConfigureAwait(false) is { IsUsable: false } dead ? dead : failed;
            }
            catch (TimeoutException)
            {
                throw NoConnectionInTime(ownTimeout);
            }
        }
    }

    private MuxConnectionException NoConnectionInTime(TimeSpan? ownTimeout)
    {
        Exception? attempt = _lastConnectError;
        string why = attempt is not null ? $" The last attempt to connect failed: {attempt.Message}"
            : _latest is { IsClosed: true } latest ? $" The last connection: {latest.CloseError.Message}"
            : string.Empty;
        return NotSent($"the Mux server at {_server}", _options, ownTimeout, why, _latest, attempt);
    }

    /// <summary>Why a call that waited for a connection to <paramref name="server"/> until its
    /// timeout was not sent (shared with the balancer, whose server has several instances).</summary>
    internal static MuxConnectionException NotSent(string server, MuxClientOptions options, TimeSpan? ownTimeout, string why, ClientConnection? latest, Exception? inner) =>
        MuxConnectionException.NotRun(
            $"No connection to {server} was available within {DurationText.Format(ownTimeout ?? options.CallTimeout)} ({(ownTimeout is null ? "MuxClientOptions.CallTimeout" : "the call's own Timeout")}); the call was not sent.{why}",
            latest?.CloseReason ?? MuxCloseReason.None,
            inner);

    /// <summary>Stops using <paramref name="connection"/> for new calls and wakes the loop to
    /// replace it. Safe to call from any thread, any number of times.</summary>
    public void Retire(ClientConnection connection)
    {
        lock (_lock)
        {
            RetireLocked(connection);
        }
    }

    private void RetireLocked(ClientConnection connection)
    {
        if (_current != connection || !Reconnects || _disposed)
        {
            return;
        }

        _current = null;
        if (_ready.Task.IsCompleted)
        {
            _ready = NewReady();
        }

        _retired.RemoveAll(static retired => retired.IsClosed);
        if (!connection.IsClosed)
        {
            _retired.Add(connection);
        }

        _replaceNow.TrySetResult();
    }

    private async Task RunAsync(ClientConnection? connection)
    {
        CancellationToken stopping = _disposing.Token;
        var backoff = new ReconnectBackoff(_options.ReconnectInitialDelay, _options.ReconnectMaxDelay);
        TimeProvider clock = _options.TimeProvider;
        int failedAttempts = 0;

        // The clock's timestamp of the latest lost connection (for the log line of the reconnect);
        // null until a connection has been lost.
        long? lostAt = null;
        Exception? error = null;
        try
        {
            while (true)
            {
                if (connection is null)
                {
                    try
                    {
                        connection = await _open!(stopping).ConfigureAwait(false);
                    }
                    catch (Exception ex) when (!stopping.IsCancellationRequested)
                    {
                        error = ex;
                        _lastConnectError = ex;
                        failedAttempts++;
                        if (!Reconnects)
                        {
                            ClientLog.ClientClosed(_logger, _server, $"connecting failed and MuxClientOptions.AutoReconnect is off: {ex.Message}");
                            return;
                        }

                        TimeSpan delay = backoff.NextDelay();
                        if (failedAttempts == 1)
                        {
                            ClientLog.ConnectFailed(_logger, _server, DurationText.Format(delay), ex);
                        }
                        else
                        {
                            ClientLog.ConnectRetryFailed(_logger, _server, failedAttempts, DurationText.Format(delay), ex);
                        }

                        // On the options' clock, so a test can step through the backoff with a fake one.
                        await Task.Delay(delay, clock, stopping).ConfigureAwait(false);
                        continue;
                    }

                    backoff.Reset();
                    _lastConnectError = null;
                }

                Task replaceNow = Publish(connection);
                if (lostAt is long lost)
                {
                    ClientLog.Reconnected(_logger, _server, failedAttempts + 1, DurationText.Format(clock.GetElapsedTime(lost)));
                }
                else
                {
                    ClientLog.Connected(_logger, _server);
                }

                SetState(MuxClientState.Connected, null);
                failedAttempts = 0;
                error = null;

                await Task.WhenAny(connection.Completion, replaceNow).WaitAsync(stopping).ConfigureAwait(false);
                if (!Reconnects)
                {
                    error = connection.CloseError;
                    ClientLog.ClientClosed(_logger, _server, $"its connection closed ({connection.CloseReason}) and MuxClientOptions.AutoReconnect is off.");
                    return;
                }

                Retire(connection);
                lostAt = clock.GetTimestamp();
                if (connection.IsClosed)
                {
                    error = connection.CloseError;
                    ClientLog.ConnectionLost(_logger, _server, connection.CloseReason, error.InnerException);
                }
                else
                {
                    error = null;
                    ClientLog.ServerGoingAway(_logger, _server);
                }

                SetState(MuxClientState.Reconnecting, error);
                connection = null;
            }
        }
        catch (Exception ex)
        {
            // Disposed (whatever the interrupted connect or wait threw): DisposeAsync closes what
            // is open. Anything else is a fault of the loop itself, and closes the client with it.
            error = stopping.IsCancellationRequested ? null : ex;
        }
        finally
        {
            Close(error);
        }
    }

    /// <summary>Makes <paramref name="connection"/> the one new calls use and wakes the callers
    /// waiting for it; returns the task that asks the loop to replace it early.</summary>
    private Task Publish(ClientConnection connection)
    {
        lock (_lock)
        {
            if (_disposed)
            {
                // DisposeAsync ran while this connection was being opened: it is nobody's now.
                _ = connection.DisposeAsync().AsTask();
                throw new OperationCanceledException(_disposing.Token);
            }

            _current = connection;
            _latest = connection;
            _replaceNow = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _ready.TrySetResult(connection);
            return _replaceNow.Task;
        }
    }

    /// <summary>Ends the client: waiting callers fail, later calls fail on the last connection or
    /// with "closed". Runs once, on the loop's way out.</summary>
    private void Close(Exception? error)
    {
        MuxConnectionException closed = error as MuxConnectionException
            ?? new MuxConnectionException($"The Mux client for {_server} is closed.", MuxCloseReason.LocalShutdown, error);
        lock (_lock)
        {
            _disposed = true;
            if (_ready.Task.IsCompleted)
            {
                _ready = NewReady();
            }

            _ready.TrySetException(closed);

            // Nobody may be waiting: mark the failure observed, or it would surface as an
            // UnobservedTaskException when the task is collected.
            _ = _ready.Task.Exception;
        }

        SetState(MuxClientState.Closed, error);
        _closed.TrySetResult();
    }

    public async ValueTask DisposeAsync()
    {
        // Cancel first: a connection the loop publishes after this is still collected below,
        // and one it opens after the lock is refused by Publish.
        _disposing.Cancel();
        ClientConnection[] open;
        lock (_lock)
        {
            _disposed = true;
            open = [.. _retired, .. _current is { } current ? [current] : Array.Empty<ClientConnection>()];
            _retired.Clear();
        }

        foreach (ClientConnection connection in open)
        {
            await connection.DisposeAsync().ConfigureAwait(false);
        }

        await _loop.ConfigureAwait(false);
    }

    private void SetState(MuxClientState state, Exception? error)
    {
        var previous = (MuxClientState)Interlocked.Exchange(ref _state, (int)state);
        if (previous != state)
        {
            Notify(_onStateChanged, previous, state, error, _logger);
        }
    }

    /// <summary>Tells the client's handler of a state change (shared with the balancer); a handler
    /// that throws is logged, never allowed to stop the loop that changed the state.</summary>
    internal static void Notify(Action<MuxClientState, MuxClientState, Exception?> onStateChanged, MuxClientState previous, MuxClientState state, Exception? error, ILogger logger)
    {
        try
        {
            onStateChanged(previous, state, error);
        }
        catch (Exception ex)
        {
            ClientLog.StateChangedHandlerFailed(logger, ex);
        }
    }

    private static TaskCompletionSource<ClientConnection> NewReady() =>
        new(TaskCreationOptions.RunContinuationsAsynchronously);
}
