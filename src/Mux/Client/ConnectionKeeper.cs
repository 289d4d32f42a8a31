using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// Keeps a <see cref="MuxClient"/> connected. One background loop owns the connection's life:
/// it connects (with backoff), publishes the connection to callers, waits until the connection
/// closes or the server sends GoAway, and starts over. Callers read <see cref="Current"/> without
/// a lock on every call; only a caller that finds no usable connection waits, on
/// <see cref="ConnectionSource.WaitForConnectionAsync"/>.
/// </summary>
/// <remarks>
/// Without an endpoint to open a new connection to (a client over a given transport), or with
/// <see cref="MuxClientOptions.AutoReconnect"/> off, the keeper never replaces its connection: a
/// lost connection closes the client, and so does a GoAway once the calls the server still serves
/// have ended. From the moment the connection is lost or has received GoAway, new calls fail at once
/// with why, as not safe to retry: this client will send nothing again.
/// </remarks>
internal sealed class ConnectionKeeper : ConnectionSource
{
    // What new connections serve to calls their server starts. Immutable.
    private readonly ServiceMethods _services;

    // Guards _current, _ready, _replaceNow, _retired and _disposed together. Taken on the slow
    // paths only (connection published or retired, a caller that must wait, dispose).
    private readonly Lock _lock = new();

    // The connection new calls go to; null while (re)connecting. Written under _lock by the loop
    // (publish) and by Retire (any thread); read without a lock by every call.
    private volatile ClientConnection? _current;

    // Completed with the next published connection; a fresh one replaces it whenever the current
    // connection is retired, and it is failed when the client closes. Guarded by _lock.
    private TaskCompletionSource<ClientConnection> _ready = NewReady();

    // Wakes the loop when the current connection is retired before it has closed (GoAway).
    // Guarded by _lock; replaced for each published connection.
    private TaskCompletionSource _replaceNow = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Connections retired before their close completed (draining after GoAway, or closing once
    // drained, which waits for the server's answer): closed with the client, which waits for them.
    private readonly List<ClientConnection> _retired = [];

    // Every connection the loop's way out closes (or drains, then closes), once it has begun; null
    // before. Guarded by _lock.
    private ClientConnection[]? _closing;

    private bool _disposed;

    // Set by the dispose of the whole client before it stops the loop (and completes _closeNow): the
    // error of the calls that the close of its connections leaves unsent.
    private volatile Func<MuxConnectionException>? _clientClosed;

    // Set by DrainAsync (a balancer dropped this instance) before it stops the loop: the loop's way
    // out drains each connection before closing it, rather than closing them all at once.
    private volatile bool _draining;

    // Completed by the dispose of the whole client: a drain under way ends, and its connections close now.
    private readonly TaskCompletionSource _closeNow = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Why the newest connect attempt failed; null after a success. Written by the loop, read by
    // callers that give up waiting (for their message).
    private volatile Exception? _lastConnectError;

    // The newest connection ever published; kept after it closes for CloseReason and statistics.
    private volatile ClientConnection? _latest;

    // Calls a balanced client sent to this instance (retries count again). Incremented with
    // Interlocked by every call that picks it; read by GetInstanceStatistics.
    private long _callsSent;

    // Told, under _lock, when the keeper is Connected and about to hand its connection to calls (a
    // balanced client's state follows before any call can pick it); null for a client's own keeper.
    private readonly Action? _onConnecting;

    private readonly Task _loop;

    /// <summary>Starts the keeper: from <paramref name="first"/> when ConnectAsync already
    /// connected, else connecting to <paramref name="endPoint"/> in the background (calls wait for
    /// its first connection).</summary>
    public ConnectionKeeper(ClientConnection? first, EndPoint? endPoint, ServiceMethods services, MuxClientOptions options, ILogger logger, string server, Action<MuxClientState, MuxClientState, Exception?> onStateChanged, Action? onConnecting = null)
        : base(options, logger, server, endPoint is not null && options.AutoReconnect, onStateChanged)
    {
        EndPoint = endPoint;
        _services = services;
        _onConnecting = onConnecting;
        _loop = RunAsync(first);
    }

    /// <summary>The newest connection, open or not; null before the first one.</summary>
    public override ClientConnection? Latest => _latest;

    /// <summary>Where new connections are opened; null for a client over a given transport.</summary>
    public EndPoint? EndPoint { get; }

    /// <summary>Counts a call that a balanced client picked this instance for.</summary>
    public void CountCall() => Interlocked.Increment(ref _callsSent);

    /// <summary>What a balanced client reports about this instance.</summary>
    public MuxEndPointStatistics GetInstanceStatistics() =>
        new(EndPoint!, State, PendingCallCount, Interlocked.Read(ref _callsSent));

    /// <summary>Calls waiting for their answer on every connection the keeper holds: the newest, and
    /// those retired while their server still owed answers (after its GoAway), also while they drain.</summary>
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
    /// The connection for a new call, or null when there is none to use. When the keeper
    /// reconnects, a connection that closed or received GoAway is retired here by the first caller
    /// that notices, so the next callers wait for its replacement instead of failing on it. When it
    /// does not, such a connection is the end of this client (<see cref="IsEnded"/>): a call on it
    /// would fail as "not sent", safe to retry, and a caller that retries on that would spin until
    /// the client closed (after a GoAway, until the longest call still running there ended).
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

    /// <summary>Whether no call gets a connection here again: the client is closed or being
    /// disposed, or the keeper does not reconnect and its connection is lost or has received GoAway.</summary>
    public override bool IsEnded => base.IsEnded || (!Reconnects && _current is { IsUsable: false });

    /// <summary>The current connection unless it is <paramref name="failed"/> or unusable: when the
    /// keeper reconnects, that one is retired here, and the caller waits for the next one.</summary>
    /// <exception cref="MuxConnectionException">The keeper does not reconnect, and its connection is
    /// lost or has received GoAway.</exception>
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

    /// <summary>Why the keeper has no usable connection, for an error's message (with
    /// <paramref name="where"/> naming the instance, over several): its newest connect attempt's
    /// failure (<paramref name="attempt"/>), else its newest connection's close; empty when it knows
    /// neither.</summary>
    public string DescribeLastFailure(string where, out Exception? attempt)
    {
        attempt = _lastConnectError;
        return attempt is not null ? $" The last attempt to connect{where} failed: {attempt.Message}" : DescribeClose(_latest, where);
    }

    /// <summary>Why a call finds no connection on a keeper that does not reconnect once
    /// <paramref name="connection"/>, its one, is lost (why it closed, as once the client has closed)
    /// or has received GoAway (draining, or closing once drained). Not safe to retry: this client
    /// sends nothing again.</summary>
    private MuxConnectionException Ended(ClientConnection connection) =>
        connection.IsClosed && connection.CloseReason != MuxCloseReason.GoAway
            ? connection.CloseError
            : new($"The Mux server at {Name} is shutting down (it sent GoAway) and this client does not reconnect ({(EndPoint is null ? "it has no endpoint to connect to again" : "MuxClientOptions.AutoReconnect is off")}); the call was not sent.", MuxCloseReason.GoAway, null);

    /// <summary>Stops using <paramref name="connection"/> for new calls and wakes the loop to
    /// replace it. Safe to call from any thread, any number of times.</summary>
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

        // Kept until its close has completed, not only begun: else the client could report itself
        // closed while such a connection still waited for its server.
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

        // The clock's timestamp of the latest lost connection (for the log line of the reconnect);
        // null until a connection has been lost.
        long? lostAt = null;

        // Whether the latest lost connection was lost within ReconnectInitialDelay of being made.
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
                        connection = await ClientConnection.OpenAsync(EndPoint!, Options, _services, Logger, stopping).ConfigureAwait(false);
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
                    ClientLog.ClientClosed(Logger, Name, $"its connection closed ({connection.CloseReason}) and MuxClientOptions.AutoReconnect is off.");
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

                // A connection that served a while was a good one: its replacement is attempted at
                // once, and from the first backoff step. Two in a row lost as soon as they were made
                // are a server that accepts and then drops (or sends GoAway at once): the next
                // attempt waits out the backoff as after a failed one, or the loop would reconnect
                // back to back for as long as the server does that.
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
            // Disposed (whatever the interrupted connect or wait threw), or a fault of the loop
            // itself, which closes the client with it.
            error = stopping.IsCancellationRequested ? null : ex;
        }
        finally
        {
            await CloseAsync(error).ConfigureAwait(false);
        }
    }

    /// <summary>Makes <paramref name="connection"/> the one new calls use and wakes the callers
    /// waiting for it; returns the task that asks the loop to replace it early.</summary>
    private Task Publish(ClientConnection connection)
    {
        lock (_lock)
        {
            if (Disposing.IsCancellationRequested)
            {
                // DisposeAsync ran while this connection was being opened: it is nobody's now, and
                // goes with the others on the loop's way out.
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

    /// <summary>Ends the client, once, on the loop's way out: waiting callers fail at once, and so do
    /// later calls once the client is Closed, all with why it closed (never safe to retry); then the
    /// connections still open are closed, and only then is the client Closed, so that whoever sees it
    /// closed (a handler of the change, an await of Completion) finds its connections closed too.</summary>
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

            // Nobody may be waiting: mark the failure observed, or it would surface as an
            // UnobservedTaskException when the task is collected.
            _ = _ready.Task.Exception;
            open = [.. _retired, .. _current is { } current ? [current] : Array.Empty<ClientConnection>()];
            _retired.Clear();
            _closing = open;
        }

        // All at once: each close may wait out its drain (a server that does not answer it: the one
        // that sent GoAway as much as the current one), and one after another those waits would add up.
        await Task.WhenAll(Array.ConvertAll(open, CloseConnectionAsync)).ConfigureAwait(false);

        SetState(MuxClientState.Closed, error);
    }

    /// <summary>Closes one of the keeper's connections; first drains it when a balancer dropped this
    /// instance: no new call is sent on it, and the calls already sent there (the ones a GoAway
    /// promised included) keep it open until they have completed, each by its own deadline at the
    /// latest, or until the whole client is disposed.</summary>
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

        // The client is closing for good: a call this close leaves unsent fails as closed, as every
        // other call of a closing client does (a reconnecting client's resend would find that too,
        // but a client that does not reconnect has none).
        if (_clientClosed is { } clientClosed)
        {
            connection.Outgoing.LeftUnsentByClose = clientClosed;
        }

        await connection.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>Stops the loop, which closes what is open on its way out: the dispose of a client
    /// over this one endpoint.</summary>
    public override ValueTask DisposeAsync() => DisposeAsync(() => Closed(null));

    /// <summary>Stops the loop, which closes what is open on its way out (a drain under way ends
    /// now); the calls those closes leave unsent fail with <paramref name="clientClosed"/>: the
    /// whole client is closing.</summary>
    public async ValueTask DisposeAsync(Func<MuxConnectionException> clientClosed)
    {
        _clientClosed ??= clientClosed;
        _closeNow.TrySetResult();
        Disposing.Cancel();
        await _loop.ConfigureAwait(false);
    }

    /// <summary>A balancer dropped this instance: the loop stops (no new connection), and on its way
    /// out each connection the keeper holds is drained (no new call; the calls sent there complete,
    /// by their own deadlines at the latest), then closed. Completes when they all are; a
    /// <see cref="DisposeAsync(Func{MuxConnectionException})"/> meanwhile closes them at once.</summary>
    public Task DrainAsync()
    {
        _draining = true;
        Disposing.Cancel();
        return _loop;
    }

    private static TaskCompletionSource<ClientConnection> NewReady() =>
        new(TaskCreationOptions.RunContinuationsAsynchronously);
}
