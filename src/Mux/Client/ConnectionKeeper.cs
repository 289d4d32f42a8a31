using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// Keeps a <see cref="MuxClient"/> connected. One background loop owns the connection's life: it connects (with backoff), publishes the
/// connection to callers, waits until it closes or the server sends GoAway, and starts over. Callers read <see cref="Current"/> without a
/// lock; only one that finds no usable connection waits.
/// </summary>
/// <remarks>
/// Without an endpoint to connect to again (a given transport), or with <see cref="MuxClientOptions.AutoReconnect"/> off, the keeper never
/// replaces its connection: its loss, or a GoAway once the server's calls have ended, closes the client, and from then on new calls fail at
/// once with why, as not safe to retry.
/// </remarks>
internal sealed class ConnectionKeeper : ConnectionSource
{
    // What new connections are opened with, and serve to the server's calls.
    private readonly ConnectionSettings _settings;
    private readonly ServiceMethods _services;

    // Guards _current, _ready, _replaceNow, _retired, _closing and _disposed. Taken on the slow paths only.
    private readonly Lock _lock = new();

    // The connection new calls go to; null while (re)connecting. Written under _lock; read without it by every call.
    private volatile ClientConnection? _current;

    // Completed with the next published connection; replaced whenever the current one is retired, failed when the client closes.
    private TaskCompletionSource<ClientConnection> _ready = NewReady();

    // Wakes the loop when the current connection is retired before it has closed (GoAway); one per published connection.
    private TaskCompletionSource _replaceNow = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Connections retired before their close completed (draining after GoAway): closed with the client, which waits for them.
    private readonly List<ClientConnection> _retired = [];

    // Every connection the loop's way out closes (or drains, then closes), once it has begun.
    private ClientConnection[]? _closing;

    private bool _disposed;

    // Set by the dispose of the whole client before it stops the loop: what the calls its closes leave unsent fail with.
    private volatile Func<MuxConnectionException>? _clientClosed;

    // Set by DrainAsync (a balancer dropped this instance) before it stops the loop: its way out drains each connection.
    private volatile bool _draining;

    // Completed by the dispose of the whole client: a drain under way ends, and its connections close now.
    private readonly TaskCompletionSource _closeNow = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Why the newest connect attempt failed; null after a success. Written by the loop, read by callers that give up.
    private volatile Exception? _lastConnectError;

    // The newest connection ever published; kept after it closes for CloseReason and statistics.
    private volatile ClientConnection? _latest;

    // Calls a balanced client sent to this instance (retries count again), with Interlocked.
    private long _callsSent;

    // Told, under _lock, when the keeper is about to hand its connection to calls, so a balanced client is Connected before any call can
    // pick it; null for a client's own keeper.
    private readonly Action? _onConnecting;

    private readonly Task _loop;

    // From first, when ConnectAsync already connected; else connecting to endPoint in the background.
    public ConnectionKeeper(
        ClientConnection? first, EndPoint? endPoint, ConnectionSettings settings, ServiceMethods services, MuxClientOptions options, ILogger logger,
        string server, Action<MuxClientState, MuxClientState, Exception?> onStateChanged, Action? onConnecting = null)
        : base(options, logger, server, endPoint is not null && options.AutoReconnect, onStateChanged)
    {
        EndPoint = endPoint;
        _settings = settings;
        _services = services;
        _onConnecting = onConnecting;
        _loop = RunAsync(first);
    }

    public override ClientConnection? Latest => _latest;

    // Null for a client over a given transport.
    public EndPoint? EndPoint { get; }

    public void CountCall() => Interlocked.Increment(ref _callsSent);

    public MuxEndPointStatistics GetInstanceStatistics() =>
        new(EndPoint!, State, PendingCallCount, Interlocked.Read(ref _callsSent));

    // On every connection the keeper holds: the newest, and those retired while their server still owed answers.
    public int PendingCallCount
    {
        get
        {
            int pending = 0;
            lock (_lock)
            {
                ClientConnection? latest = _closing is null ? _latest : null;
                foreach (ClientConnection connection in _closing ?? [.. _retired])
                {
                    pending += connection == latest ? 0 : connection.PendingCallCount;
                }

                return pending + (latest?.PendingCallCount ?? 0);
            }
        }
    }

    /// <summary>
    /// The connection for a new call, or null. When the keeper reconnects, a connection that closed or received GoAway is retired by the
    /// first caller that notices, so the next callers wait for its replacement. When it does not, such a connection is the end of this
    /// client (<see cref="IsEnded"/>): a call on it would fail as safe to retry, and a caller that retries would spin until the client
    /// closed.
    /// </summary>
    public override ClientConnection? Current
    {
        get
        {
            ClientConnection? connection = _current;
            if (connection is null || connection.IsUsable)
            {
                return connection;
            }

            if (Reconnects)
            {
                Retire(connection);
            }

            return null;
        }
    }

    public override bool IsEnded => base.IsEnded || (!Reconnects && _current is { IsUsable: false });

    /// <summary>The current connection unless it is <paramref name="failed"/> or unusable: when the keeper reconnects, that one is retired
    /// here, and the caller waits for the next one.</summary>
    /// <exception cref="MuxConnectionException">The keeper does not reconnect, and its connection is lost or has received
    /// GoAway.</exception>
    protected override ClientConnection? TryTake(ClientConnection? failed, bool forCall, out Task changed)
    {
        lock (_lock)
        {
            ClientConnection? connection = _current;
            if (connection is not null)
            {
                if (connection != failed && connection.IsUsable)
                {
                    changed = Task.CompletedTask;
                    return connection;
                }

                // Once the client has closed, the wait fails with why it closed.
                if (!Reconnects && !_disposed)
                {
                    throw Ended(connection);
                }

                RetireLocked(connection);
            }

            // Read after the retire, which may have replaced it.
            changed = _ready.Task;
            return null;
        }
    }

    protected override MuxConnectionException NoConnectionInTime(TimeSpan? ownTimeout)
    {
        string why = DescribeLastFailure(string.Empty, out Exception? attempt);
        return NotSent($"the Mux server at {Name}", ownTimeout, why, _latest, attempt);
    }

    /// <summary>Why the keeper has no usable connection, for a message (<paramref name="where"/> names the instance, over several): its
    /// newest connect attempt's failure, else its newest connection's close; empty when it knows neither.</summary>
    public string DescribeLastFailure(string where, out Exception? attempt)
    {
        attempt = _lastConnectError;
        return attempt is not null ? $" The last attempt to connect{where} failed: {attempt.Message}" : DescribeClose(_latest, where);
    }

    // Why a call finds no connection on a keeper that does not reconnect, once its one is lost or has received GoAway. Not safe to retry:
    // this client sends nothing again.
    private MuxConnectionException Ended(ClientConnection connection) =>
        connection.IsClosed && connection.CloseReason != MuxCloseReason.GoAway
            ? connection.CloseError
            : new(
                $"The Mux server at {Name} is shutting down (it sent GoAway) and this client does not reconnect (" +
                (EndPoint is null ? "it has no endpoint to connect to again" : "MuxClientOptions.AutoReconnect is off") +
                "); the call was not sent.",
                MuxCloseReason.GoAway,
                null);

    // Stops using the connection for new calls and wakes the loop to replace it. Any thread, any number of times.
    private void Retire(ClientConnection connection)
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

        // Kept until its close has completed: else the client could report itself closed while it still waited for its server.
        _retired.RemoveAll(static retired => retired.Completion.IsCompleted);
        if (!connection.Completion.IsCompleted)
        {
            _retired.Add(connection);
        }

        _replaceNow.TrySetResult();
    }

    private async Task RunAsync(ClientConnection? connection)
    {
        CancellationToken stopping = Disposing.Token;
        var backoff = new ReconnectBackoff(Options.ReconnectInitialDelay, Options.ReconnectMaxDelay);
        TimeProvider clock = Options.TimeProvider;
        int failedAttempts = 0;

        // When the latest connection was lost (for the reconnect's log line), and whether within ReconnectInitialDelay of being made.
        long? lostAt = null;
        bool lostSoon = false;
        Exception? error = null;
        try
        {
            while (true)
            {
                if (connection is null)
                {
                    try
                    {
                        connection = await ClientConnection.OpenAsync(EndPoint!, Options, _settings, _services, Logger, stopping)
                            .ConfigureAwait(false);
                    }
                    catch (Exception ex) when (!stopping.IsCancellationRequested)
                    {
                        error = ex;
                        _lastConnectError = ex;
                        failedAttempts++;
                        if (!Reconnects)
                        {
                            ClientLog.ClientClosed(Logger, Name, $"connecting failed and MuxClientOptions.AutoReconnect is off: {ex.Message}");
                            return;
                        }

                        TimeSpan delay = backoff.NextDelay();
                        if (failedAttempts == 1)
                        {
                            ClientLog.ConnectFailed(Logger, Name, DurationText.Format(delay), ex);
                        }
                        else
                        {
                            ClientLog.ConnectRetryFailed(Logger, Name, failedAttempts, DurationText.Format(delay), ex);
                        }

                        // On the options' clock, so a test can step through the backoff with a fake one.
                        await Task.Delay(delay, clock, stopping).ConfigureAwait(false);
                        continue;
                    }

                    _lastConnectError = null;
                }

                Task replaceNow = Publish(connection);
                long connectedAt = clock.GetTimestamp();
                if (lostAt is long lost)
                {
                    ClientLog.Reconnected(Logger, Name, failedAttempts + 1, DurationText.Format(clock.GetElapsedTime(lost)));
                }
                else
                {
                    ClientLog.Connected(Logger, Name);
                }

                SetState(MuxClientState.Connected, null);
                failedAttempts = 0;
                error = null;

                await Task.WhenAny(connection.Completion, replaceNow).WaitAsync(stopping).ConfigureAwait(false);
                if (!Reconnects)
                {
                    error = connection.CloseError;
                    ClientLog.ClientClosed(
                        Logger, Name, $"its connection closed ({connection.CloseReason}) and MuxClientOptions.AutoReconnect is off.");
                    return;
                }

                Retire(connection);
                lostAt = clock.GetTimestamp();
                if (connection.IsClosed)
                {
                    error = connection.CloseError;
                    ClientLog.ConnectionLost(Logger, Name, connection.CloseReason, error.InnerException);
                }
                else
                {
                    error = null;
                    ClientLog.ServerGoingAway(Logger, Name);
                }

                SetState(MuxClientState.Reconnecting, error);
                connection = null;

                // A connection that served a while was a good one: its replacement is attempted at once. Two in a row lost as soon as made
                // are a server that accepts and then drops: the next attempt waits out the backoff, or the loop would reconnect back to
                // back for as long as the server does that.
                bool soon = clock.GetElapsedTime(connectedAt, lostAt.Value) < Options.ReconnectInitialDelay;
                if (!soon)
                {
                    backoff.Reset();
                }
                else if (lostSoon)
                {
                    await Task.Delay(backoff.NextDelay(), clock, stopping).ConfigureAwait(false);
                }

                lostSoon = soon;
            }
        }
        catch (Exception ex)
        {
            // Disposed (whatever the interrupted connect or wait threw), or a fault of the loop itself, which closes the client.
            error = stopping.IsCancellationRequested ? null : ex;
        }
        finally
        {
            await CloseAsync(error).ConfigureAwait(false);
        }
    }

    // Returns the task that asks the loop to replace the connection early.
    private Task Publish(ClientConnection connection)
    {
        lock (_lock)
        {
            if (Disposing.IsCancellationRequested)
            {
                // DisposeAsync ran while this connection was being opened: it goes with the others on the loop's way out.
                _retired.Add(connection);
                throw new OperationCanceledException(Disposing.Token);
            }

            // Connected before any call can use it; the handler is told once it is logged.
            StoreState(MuxClientState.Connected);
            _onConnecting?.Invoke();
            _current = connection;
            _latest = connection;
            _replaceNow = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _ready.TrySetResult(connection);
            return _replaceNow.Task;
        }
    }

    // Ends the client, once, on the loop's way out: waiting and later calls fail with why it closed (never safe to retry); the connections
    // still open are closed, and only then is the client Closed, so whoever sees it closed finds them so.
    private async Task CloseAsync(Exception? error)
    {
        MuxConnectionException closed = error as MuxConnectionException ?? Closed(error);
        ClientConnection[] open;
        lock (_lock)
        {
            _disposed = true;
            if (_ready.Task.IsCompleted)
            {
                _ready = NewReady();
            }

            _ready.TrySetException(closed);

            // Nobody may be waiting: mark the failure observed, or it would surface as an UnobservedTaskException.
            _ = _ready.Task.Exception;
            open = [.. _retired, .. _current is { } current ? [current] : Array.Empty<ClientConnection>()];
            _retired.Clear();
            _closing = open;
        }

        // All at once: each close may wait out its drain, and one after another those waits would add up.
        await Task.WhenAll(Array.ConvertAll(open, CloseConnectionAsync)).ConfigureAwait(false);

        SetState(MuxClientState.Closed, error);
    }

    // When a balancer dropped this instance, first drains the connection: no new call is sent on it, and the calls already sent there keep
    // it open until they complete (each by its own deadline at the latest), or the client is disposed.
    private async Task CloseConnectionAsync(ClientConnection connection)
    {
        if (_draining)
        {
            Task drained = connection.Outgoing.StopSending();
            await Task.WhenAny(drained, connection.Completion, _closeNow.Task).ConfigureAwait(false);
            if (drained.IsCompleted && !connection.IsClosed)
            {
                ClientLog.RemovedInstanceDrained(Logger, Name);
            }
        }

        // The client is closing for good: a call this close leaves unsent fails as closed, as every other call of it does.
        if (_clientClosed is { } clientClosed)
        {
            connection.Outgoing.LeftUnsentByClose = clientClosed;
        }

        await connection.DisposeAsync().ConfigureAwait(false);
    }

    // The dispose of a client over this one endpoint: the loop closes what is open on its way out.
    public override ValueTask DisposeAsync() => DisposeAsync(() => Closed(null));

    // The whole client is closing: a drain under way ends now, and the calls the closes leave unsent fail with clientClosed.
    public async ValueTask DisposeAsync(Func<MuxConnectionException> clientClosed)
    {
        _clientClosed ??= clientClosed;
        _closeNow.TrySetResult();
        Disposing.Cancel();
        await _loop.ConfigureAwait(false);
    }

    // A balancer dropped this instance: the loop stops, and on its way out drains each connection, then closes it. A DisposeAsync meanwhile
    // closes them at once.
    public Task DrainAsync()
    {
        _draining = true;
        Disposing.Cancel();
        return _loop;
    }

    private static TaskCompletionSource<ClientConnection> NewReady() =>
        new(TaskCreationOptions.RunContinuationsAsynchronously);
}
