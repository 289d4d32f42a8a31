using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Client;

/// <summary>
/// Where a <see cref="MuxClient"/> gets the connection for each call: one endpoint's <see cref="ConnectionKeeper"/>, or an
/// <see cref="Balancing.EndPointBalancer"/> over several. Both share the client's state and its report to the handler, the client's end,
/// and what their connections are opened and logged with.
/// </summary>
internal abstract class ConnectionSource : IAsyncDisposable
{
    private readonly Action<MuxClientState, MuxClientState, Exception?> _onStateChanged;

    // Completed when the client is closed for good (Completion).
    private readonly TaskCompletionSource _closed = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Written by one writer at a time (the keeper's loop; the balancer under its lock); read by anyone.
    private volatile int _state = (int)MuxClientState.Connecting;

    // The state the handler was last told of; behind _state only between a StoreState and its SetState. Same writers.
    private MuxClientState _reported = MuxClientState.Connecting;

    protected ConnectionSource(
        MuxClientOptions options, ILogger logger, string name, bool reconnects, Action<MuxClientState, MuxClientState, Exception?> onStateChanged)
    {
        Options = options;
        Logger = logger;
        Name = name;
        Reconnects = reconnects;
        _onStateChanged = onStateChanged;
    }

    /// <summary>Whether lost connections are replaced (and calls that never ran are retried).</summary>
    public bool Reconnects { get; }

    public MuxClientState State => (MuxClientState)_state;

    /// <summary>Completes when the client is closed for good.</summary>
    public Task Completion => _closed.Task;

    /// <summary>The connection for a new call, or null when the caller must wait. Read by every call: no lock, no allocation.</summary>
    public abstract ClientConnection? Current { get; }

    /// <summary>Where a call <paramref name="refusedBy"/> refused unrun goes again: over several instances, the least busy other usable
    /// one; else
    /// <paramref name="refusedBy"/> itself while it is usable; else the current connection or none.</summary>
    public virtual ClientConnection? ForRetry(ClientConnection refusedBy) => refusedBy.IsUsable ? refusedBy : Current;

    /// <summary>The newest connection, open or not; null before the first one.</summary>
    public abstract ClientConnection? Latest { get; }

    /// <summary>Whether no call gets a connection here again (closed, disposing, or closing without another connection): a call that finds
    /// none then waits, whether or not it would, and the wait fails at once with why.</summary>
    public virtual bool IsEnded => State == MuxClientState.Closed || Disposing.IsCancellationRequested;

    /// <summary>Calls waiting for their response right now (on every instance's connection, over several).</summary>
    public virtual int PendingCalls => Latest?.PendingCallCount ?? 0;

    /// <summary>What the client knows about each instance it spreads calls over; empty over one endpoint.</summary>
    public virtual IReadOnlyList<MuxEndPointStatistics> GetEndPointStatistics() => [];

    protected MuxClientOptions Options { get; }

    protected ILogger Logger { get; }

    /// <summary>The server as log lines and error messages name it.</summary>
    protected string Name { get; }

    /// <summary>Cancelled by DisposeAsync: stops the loops and the waits they are in.</summary>
    protected CancellationTokenSource Disposing { get; } = new();

    public abstract ValueTask DisposeAsync();

    /// <summary>Moves the client to <paramref name="state"/> and tells the handler; a handler that throws is logged, never allowed to stop
    /// the loop that changed the state. Closed is final.</summary>
    /// <returns>Whether the state changed since the handler was last told.</returns>
    protected bool SetState(MuxClientState state, Exception? error)
    {
        MuxClientState previous = _reported;
        if (previous == state || previous == MuxClientState.Closed)
        {
            return false;
        }

        _state = (int)state;
        _reported = state;
        try
        {
            _onStateChanged(previous, state, error);
        }
        catch (Exception ex)
        {
            ClientLog.StateChangedHandlerFailed(Logger, ex);
        }

        if (state == MuxClientState.Closed)
        {
            _closed.TrySetResult();
        }

        return true;
    }

    /// <summary>Moves the client to <paramref name="state"/> (not Closed) before a connection is handed to calls, so that a caller whose
    /// call succeeded on it never finds the client still connecting; the next SetState tells the handler.</summary>
    protected void StoreState(MuxClientState state)
    {
        if (_reported != MuxClientState.Closed)
        {
            _state = (int)state;
        }
    }

    /// <summary>Waits for a usable connection other than <paramref name="failed"/> (the one a call just failed on without running) until
    /// <paramref name="deadline"/>, a <see cref="ClockDeadline"/> timestamp or <see cref="ClockDeadline.Never"/>.
    /// <paramref name="ownTimeout"/> is the call's own timeout when it replaced CallTimeout (for the message), else null;
    /// <paramref name="forCall"/> says whether a call goes to the connection found (what a balanced client counts).</summary>
    /// <exception cref="MuxConnectionException">No connection came in time (safe to retry), or the client is closed.</exception>
    public async ValueTask<ClientConnection> WaitForConnectionAsync(
        ClientConnection? failed, long deadline, TimeSpan? ownTimeout, bool forCall, CancellationToken cancellationToken)
    {
        while (true)
        {
            if (TryTake(failed, forCall, out Task changed) is { } connection)
            {
                return connection;
            }

            if (changed.IsFaulted)
            {
                // The client has closed: a call fails with why, however late it came ("no connection in time" would tell its caller to
                // retry on a client that will send nothing again).
                await changed.ConfigureAwait(false);
            }

            if (!ClockDeadline.TryGetRemaining(Options.TimeProvider, deadline, out TimeSpan wait))
            {
                throw NoConnectionInTime(ownTimeout);
            }

            try
            {
                await changed.WaitAsync(wait, Options.TimeProvider, cancellationToken).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                throw NoConnectionInTime(ownTimeout);
            }
        }
    }

    /// <summary>The connection for a waiting caller, never <paramref name="failed"/>; or null, with <paramref name="changed"/> the task
    /// that completes when it is worth looking again (or fails once the client is closed).</summary>
    /// <exception cref="MuxConnectionException">The client is closed (or <see cref="IsEnded"/>).</exception>
    protected abstract ClientConnection? TryTake(ClientConnection? failed, bool forCall, out Task changed);

    /// <summary>Why a call that waited for a connection until its deadline was not sent.</summary>
    protected abstract MuxConnectionException NoConnectionInTime(TimeSpan? ownTimeout);

    /// <summary>Why a call that waited for a connection to <paramref name="server"/> until its timeout was not sent.</summary>
    protected MuxConnectionException NotSent(string server, TimeSpan? ownTimeout, string why, ClientConnection? latest, Exception? inner) =>
        MuxConnectionException.NotRun(
            $"No connection to {server} was available within {DurationText.Format(ownTimeout ?? Options.CallTimeout)} " +
            $"({(ownTimeout is null ? "MuxClientOptions.CallTimeout" : "the call's own Timeout")}); the call was not sent.{why}",
            latest?.CloseReason ?? MuxCloseReason.None,
            inner);

    /// <summary>" The last connection{where}: ...", why <paramref name="latest"/> closed, for the message of a call that found no
    /// connection; empty while it is open or before the first one.</summary>
    internal static string DescribeClose(ClientConnection? latest, string where = "") =>
        latest is { IsClosed: true } ? $" The last connection{where}: {latest.CloseError.Message}" : string.Empty;

    /// <summary>The error of calls on a client that is closed for good.</summary>
    protected MuxConnectionException Closed(Exception? inner) =>
        new($"The Mux client for {Name} is closed.", MuxCloseReason.LocalShutdown, inner);
}
