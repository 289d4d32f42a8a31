using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Transport;

namespace Mux.Client.Balancing;

/// <summary>
/// The connections of a client over several instances of one server: one <see cref="ConnectionKeeper"/> per instance, and the per-call pick
/// among them.
/// </summary>
/// <remarks>
/// <para>The pick (<see cref="Current"/>) reads an immutable array without a lock and allocates nothing; it skips instances with no usable
/// connection. Two random choices are the default: constant cost whatever the number of instances, and no herding, where a full scan sends
/// every call made just after one instance's answers arrive to that same instance.</para>
/// <para>The set changes only through <see cref="Update"/>: new instances get a keeper, and removed ones leave the array at once and close
/// each connection once the calls sent on it have completed.</para>
/// </remarks>
internal sealed partial class EndPointBalancer : ConnectionSource
{
    // Guards _endPoints writes, _removed, _changed, the aggregated State and _disposed; taken on slow paths only.
    private readonly Lock _lock = new();

    // The instances new calls may go to. Replaced, never mutated, under _lock; read by every call without it.
    private volatile ConnectionKeeper[] _endPoints = [];

    // Completed and replaced whenever an instance connects, the set changes or the client closes: waiting callers look again.
    private volatile TaskCompletionSource _changed = NewSignal();

    // Removed instances still finishing their calls: closed by their drain, or by DisposeAsync.
    private readonly List<ConnectionKeeper> _removed = [];

    // Whether any instance has ever connected (Connecting before, Reconnecting after). Under _lock.
    private bool _everConnected;

    private bool _disposed;

    // Why the last instance of a fixed list closed, once every one has: what calls on the closed client fail with. Written under _lock
    // before the Closed state is stored, so a caller that reads that state sees it.
    private Exception? _closedBy;

    private readonly Task _resolveLoop = Task.CompletedTask;

    // What every instance's connections are opened with, and serve to the server's calls (the MuxClient's).
    private readonly ConnectionSettings _settings;
    private readonly ServiceMethods _services;

    public EndPointBalancer(
        MuxClientOptions options, ConnectionSettings settings, ServiceMethods services, ILogger logger,
        Action<MuxClientState, MuxClientState, Exception?> onStateChanged)
        : base(options, logger, NameOf(options), options.AutoReconnect, onStateChanged)
    {
        _settings = settings;
        _services = services;
        if (options.EndPointResolver is { } endPointResolver)
        {
            _resolveLoop = ResolveLoopAsync(endPointResolver);
        }
        else
        {
            Update([.. options.EndPoints]);
        }
    }

    /// <summary>An open connection of some instance if there is one, else the newest known.</summary>
    public override ClientConnection? Latest
    {
        get
        {
            ClientConnection? any = null;
            foreach (ConnectionKeeper endPoint in _endPoints)
            {
                ClientConnection? latest = endPoint.Latest;
                if (latest is { IsClosed: false })
                {
                    return latest;
                }

                any ??= latest;
            }

            return any;
        }
    }

    /// <summary>Calls pending on all instances, removed ones still finishing their calls included.</summary>
    public override int PendingCalls
    {
        get
        {
            int pending = 0;
            foreach (ConnectionKeeper endPoint in _endPoints)
            {
                pending += endPoint.PendingCallCount;
            }

            lock (_lock)
            {
                foreach (ConnectionKeeper endPoint in _removed)
                {
                    pending += endPoint.PendingCallCount;
                }
            }

            return pending;
        }
    }

    public override IReadOnlyList<MuxEndPointStatistics> GetEndPointStatistics()
    {
        ConnectionKeeper[] endPoints = _endPoints;
        var statistics = new MuxEndPointStatistics[endPoints.Length];
        for (int i = 0; i < statistics.Length; i++)
        {
            statistics[i] = endPoints[i].GetInstanceStatistics();
        }

        return statistics;
    }

    /// <summary>The one of two random usable instances with fewer pending calls (or the fewest of all); null when none is.</summary>
    public override ClientConnection? Current => Pick(count: true);

    // count: whether a call will go to the pick (MuxEndPointStatistics.CallsSent).
    private ClientConnection? Pick(bool count)
    {
        ConnectionKeeper[] endPoints = _endPoints;
        if (endPoints.Length == 0)
        {
            return null;
        }

        return Options.Balancing == BalancingPolicy.PowerOfTwoChoices && endPoints.Length > 2
            ? PickOfTwo(endPoints, count) ?? PickLeastPending(endPoints, count)
            : PickLeastPending(endPoints, count);
    }

    // The least loaded usable instance other than except, from a random start so that ties spread.
    private static ClientConnection? PickLeastPending(ConnectionKeeper[] endPoints, bool count, ClientConnection? except = null)
    {
        int length = endPoints.Length;
        int start = length <= 1 ? 0 : Random.Shared.Next(length);
        ClientConnection? best = null;
        ConnectionKeeper? bestEndPoint = null;
        int bestLoad = int.MaxValue;
        for (int i = 0; i < length; i++)
        {
            int index = start + i;
            ConnectionKeeper endPoint = endPoints[index < length ? index : index - length];
            if (endPoint.Current is { IsUsable: true } connection && connection != except && connection.Load is var load && load < bestLoad)
            {
                best = connection;
                bestEndPoint = endPoint;
                bestLoad = load;
            }
        }

        if (count)
        {
            bestEndPoint?.CountCall();
        }

        return best;
    }

    private static ClientConnection? PickOfTwo(ConnectionKeeper[] endPoints, bool count)
    {
        int first = Random.Shared.Next(endPoints.Length);
        int second = Random.Shared.Next(endPoints.Length - 1);
        if (second >= first)
        {
            second++;
        }

        ClientConnection? a = endPoints[first].Current is { IsUsable: true } ca ? ca : null;
        ClientConnection? b = endPoints[second].Current is { IsUsable: true } cb ? cb : null;
        if (a is null && b is null)
        {
            return null;
        }

        bool takeFirst = b is null || (a is not null && a.Load <= b.Load);
        if (count)
        {
            endPoints[takeFirst ? first : second].CountCall();
        }

        return takeFirst ? a : b;
    }

    /// <summary>The least busy usable instance other than <paramref name="refusedBy"/>, counting each one's recent refusals; without one,
    /// as over one endpoint.</summary>
    public override ClientConnection? ForRetry(ClientConnection refusedBy) =>
        PickLeastPending(_endPoints, count: true, except: refusedBy) ?? base.ForRetry(refusedBy);

    /// <summary>Waits until some instance is connected (ConnectAsync); sends nothing.</summary>
    /// <exception cref="MuxConnectionException">No instance connected within ConnectTimeout, or (without AutoReconnect) every one
    /// failed.</exception>
    public async Task WaitUntilConnectedAsync(long deadline, CancellationToken cancellationToken)
    {
        try
        {
            await WaitForConnectionAsync(null, deadline, null, forCall: false, cancellationToken).ConfigureAwait(false);
        }
        catch (MuxConnectionException)
        {
            // The wait's own errors speak of a call not sent within CallTimeout, or of a closed client: this one says why the client could
            // not connect.
            bool closed = State == MuxClientState.Closed;
            string why = DescribeInstances(out Exception? inner);
            string within = closed ? string.Empty : $" within {DurationText.Format(Options.ConnectTimeout)} (MuxClientOptions.ConnectTimeout)";
            throw new MuxConnectionException(
                $"Could not connect to any instance of the Mux server ({Name}){within}.{why}",
                Latest?.CloseReason ?? MuxCloseReason.None,
                inner);
        }
    }

    /// <summary>The pick, unless it is <paramref name="failed"/>; else the caller waits for an instance to connect or the set to
    /// change.</summary>
    protected override ClientConnection? TryTake(ClientConnection? failed, bool forCall, out Task changed)
    {
        // Read the signal before looking: a change after the look completes it, so no wake-up is lost.
        changed = _changed.Task;
        if (_disposed || State == MuxClientState.Closed)
        {
            // As a keeper over one endpoint: its close error, or the client's closed error with why.
            throw _closedBy as MuxConnectionException ?? Closed(_closedBy);
        }

        return Pick(forCall) is { } connection && connection != failed ? connection : null;
    }

    protected override MuxConnectionException NoConnectionInTime(TimeSpan? ownTimeout)
    {
        string why = DescribeInstances(out Exception? inner);
        return NotSent($"any instance of the Mux server ({Name})", ownTimeout, why, Latest, inner);
    }

    /// <summary>Why no instance has a usable connection, for an error's message: what the resolver said while none is known, else what the
    /// first instance that knows says of its newest connect attempt or connection (<paramref name="inner"/>: the resolver's or the
    /// attempt's exception).</summary>
    private string DescribeInstances(out Exception? inner)
    {
        ConnectionKeeper[] endPoints = _endPoints;
        if (endPoints.Length == 0)
        {
            return DescribeNoInstance(out inner);
        }

        string last = string.Empty;
        inner = null;
        foreach (ConnectionKeeper endPoint in endPoints)
        {
            last = endPoint.DescribeLastFailure($" ({endPoint.EndPoint})", out inner);
            if (last.Length != 0)
            {
                break;
            }
        }

        return $" None of its {endPoints.Length} instance(s) had a usable connection.{last}";
    }

    /// <summary>
    /// Makes <paramref name="endPoints"/> the set of instances: keeps those already known, starts a keeper for each new one, and drains and
    /// closes the ones no longer listed. A known one that has closed (its connection lost with AutoReconnect off) is replaced as if it were
    /// new: the resolver still names it, and a closed keeper would never take a call again.
    /// </summary>
    public void Update(IReadOnlyList<EndPoint> endPoints)
    {
        var removed = new List<ConnectionKeeper>();
        lock (_lock)
        {
            if (_disposed)
            {
                return;
            }

            ConnectionKeeper[] current = _endPoints;
            var next = new List<ConnectionKeeper>(endPoints.Count);
            foreach (EndPoint endPoint in endPoints)
            {
                if (next.Exists(known => endPoint.Equals(known.EndPoint)))
                {
                    continue;
                }

                ConnectionKeeper? kept = Array.Find(current, known => endPoint.Equals(known.EndPoint) && known.State != MuxClientState.Closed);
                next.Add(kept ?? StartLocked(endPoint));
            }

            foreach (ConnectionKeeper endPoint in current)
            {
                if (!next.Contains(endPoint))
                {
                    removed.Add(endPoint);
                    _removed.Add(endPoint);
                }
            }

            if (removed.Count == 0 && next.Count == current.Length)
            {
                return;
            }

            _endPoints = [.. next];
            ClientLog.EndPointsChanged(Logger, Name, next.Count, next.Count - (current.Length - removed.Count), removed.Count);
            AggregateLocked(null);
            SignalLocked();
        }

        foreach (ConnectionKeeper endPoint in removed)
        {
            _ = DrainAsync(endPoint);
        }
    }

    private ConnectionKeeper StartLocked(EndPoint address)
    {
        // A change the keeper reports before it is assigned here (a connect that fails at once) comes with null: the keeper is not in the
        // set yet, and Update aggregates once it is.
        ConnectionKeeper? keeper = null;
        keeper = new ConnectionKeeper(
            null,
            address,
            _settings,
            _services,
            Options,
            Logger,
            address.ToString() ?? "server",
            (previous, state, error) => OnEndPointStateChanged(keeper, previous, state, error),
            () => OnEndPointConnecting(keeper));
        return keeper;
    }

    /// <summary>An instance is Connected and about to take calls: the client is Connected before any call can pick it (its handler is told
    /// with the instance's, once that is logged).</summary>
    private void OnEndPointConnecting(ConnectionKeeper? endPoint)
    {
        lock (_lock)
        {
            if (!_disposed && endPoint is not null && Array.IndexOf(_endPoints, endPoint) >= 0)
            {
                StoreState(MuxClientState.Connected);
            }
        }
    }

    /// <summary>A removed instance: no new calls reach it; each of its connections closes once the calls sent on it have completed (see
    /// <see cref="ConnectionKeeper.DrainAsync"/>).</summary>
    private async Task DrainAsync(ConnectionKeeper endPoint)
    {
        // Listed among the removed until its close has completed, not only begun: a DisposeAsync meanwhile closes it at once and waits for
        // it too, or the client could report itself closed while this connection still waited for its server.
        await endPoint.DrainAsync().ConfigureAwait(false);
        lock (_lock)
        {
            _removed.Remove(endPoint);
        }
    }

    private void OnEndPointStateChanged(ConnectionKeeper? endPoint, MuxClientState previous, MuxClientState state, Exception? error)
    {
        lock (_lock)
        {
            if (state == MuxClientState.Connected)
            {
                _everConnected = true;
                SignalLocked();
            }

            if (endPoint is not null && Array.IndexOf(_endPoints, endPoint) >= 0)
            {
                AggregateLocked(error);
            }
        }

        if (state == MuxClientState.Reconnecting || (state == MuxClientState.Closed && previous == MuxClientState.Connected))
        {
            // An instance went away: the resolver may know that it moved or was replaced, and (without AutoReconnect, its connection lost
            // for good) only its answer connects it again. A connect that failed does not ask: without AutoReconnect that would retry at
            // the loop's pace.
            _resolveNow.TrySetResult();
        }
    }

    /// <summary>The client's state: connected while any instance is; closed, with <see cref="MuxClientOptions.AutoReconnect"/> off, once
    /// every instance has closed (of a fixed list: a resolver's next answer connects them again). Once disposed, it is left to
    /// DisposeAsync, which closes the client when every instance is closed.</summary>
    private void AggregateLocked(Exception? error)
    {
        if (_disposed)
        {
            return;
        }

        ConnectionKeeper[] endPoints = _endPoints;
        bool anyConnected = false;
        bool allClosed = endPoints.Length > 0;
        foreach (ConnectionKeeper endPoint in endPoints)
        {
            anyConnected |= endPoint.State == MuxClientState.Connected;
            allClosed &= endPoint.State == MuxClientState.Closed;
        }

        MuxClientState state = allClosed && Options.EndPointResolver is null ? MuxClientState.Closed
            : anyConnected ? MuxClientState.Connected
            : _everConnected ? MuxClientState.Reconnecting
            : MuxClientState.Connecting;
        if (state == MuxClientState.Closed)
        {
            _closedBy = error;
        }

        SetStateLocked(state, error);
    }

    private void SetStateLocked(MuxClientState state, Exception? error)
    {
        if (SetState(state, error) && state == MuxClientState.Closed)
        {
            SignalLocked();
        }
    }

    private void SignalLocked()
    {
        TaskCompletionSource changed = _changed;
        _changed = NewSignal();
        changed.TrySetResult();
    }

    public override async ValueTask DisposeAsync()
    {
        Disposing.Cancel();
        ConnectionKeeper[] open;
        bool again;
        lock (_lock)
        {
            again = _disposed;
            open = [.. _endPoints, .. _removed];
            _disposed = true;
            _removed.Clear();
            SignalLocked();
        }

        if (again)
        {
            // Another dispose closes the instances: this one is done when that one is.
            await Completion.ConfigureAwait(false);
            return;
        }

        // No instance can join the set now (Update sees _disposed): they are closed first, whatever the resolver's ask still under way
        // does. All at once: each close may wait out its drain (a server that does not answer it), and one after another those waits would
        // add up. Calls their closes leave unsent fail as this client closed, with its name.
        Func<MuxConnectionException> clientClosed = () => Closed(null);
        await Task.WhenAll(Array.ConvertAll(open, endPoint => endPoint.DisposeAsync(clientClosed).AsTask())).ConfigureAwait(false);

        await StopResolvingAsync().ConfigureAwait(false);
        lock (_lock)
        {
            SetStateLocked(MuxClientState.Closed, null);
        }
    }

    private static TaskCompletionSource NewSignal() => new(TaskCreationOptions.RunContinuationsAsynchronously);

    // The server as log lines and messages name it: the service, the resolver, or the endpoints.
    private static string NameOf(MuxClientOptions options) =>
        options.Service ?? (options.EndPointResolver is { } resolver ? resolver.ToString() ?? "resolver" : string.Join(", ", options.EndPoints));
}
