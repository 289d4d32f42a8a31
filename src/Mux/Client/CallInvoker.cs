using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Mux.Connection;
using Mux.Serialization;
using Mux.Streaming;

namespace Mux.Client;

/// <summary>
/// The one way in for a client's calls of all six shapes, each with this invoker's <see cref="CallSettings"/>: MuxClient forwards to the
/// client's own, and a bound proxy calls one of its own. A unary call's deadline is fixed once when the user makes it; then it takes the
/// current connection, waits for one when none is up, and is sent again when the server provably never ran it, within the client's
/// <see cref="RetryBudget"/>: on the next connection when its own left it unsent, on another instance (or the same one) when the server
/// refused it as Overloaded or TooManyCalls. Every wait and resend spend from that one deadline. As a <see cref="CallSource"/> it is where
/// its streaming calls find their connection.
/// </summary>
/// <remarks>
/// A call not complete when it returns goes through <c>RetryIfNotRunAsync</c>, whose state machine comes from a pool, so a call allocates
/// nothing in steady state; it keeps the arguments by value so a resend can write them again.
/// </remarks>
internal sealed partial class CallInvoker : CallSource, IMuxCallInvoker
{
    private readonly ClientRuntime _runtime;
    private readonly CallSettings _settings;

    // One endpoint's keeper or the balancer: set before any invoker of the client is made.
    private readonly ConnectionSource _keeper;

    // Calls the server reported as never run are sent again only within it; null: never.
    private readonly RetryBudget? _retryBudget;

    // Outermost first; empty for a client without any, whose calls then never look at them again.
    private readonly IMuxClientInterceptor[] _interceptors;

    public CallInvoker(ClientRuntime runtime, CallSettings settings)
    {
        _runtime = runtime;
        _settings = settings;
        _keeper = runtime.Keeper;
        _retryBudget = runtime.RetryBudget;
        _interceptors = runtime.Interceptors;
    }

    private TimeProvider Clock => _settings.Clock;

    /// <summary>The invoker of a proxy bound to <paramref name="options"/>.</summary>
    public CallInvoker Bind(MuxCallOptions options) => new(_runtime, _settings.Bind(options));

    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (_interceptors.Length != 0)
        {
            return new UnaryChain<TArguments, TResult>(this, NewCall(methodId, cancellationToken), methodId, arguments).RunAsync();
        }

        // The one place a call's deadline is fixed: every wait and any resend spend from it.
        CallDeadline deadline = _settings.FixDeadline(0, out long now);
        return SendAsync<TArguments, TResult>(methodId, arguments, deadline, now, _settings.EncodedMetadata, cancellationToken);
    }

    /// <summary>A call without a result goes the way of one with (VoidResult) on the rare paths, through interceptors or without a
    /// connection; sent at once, it is awaited through its own call object, without the hop a VoidResult.Ignore would add.</summary>
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection? connection = _interceptors.Length == 0 ? _keeper.Current : null;
        if (connection is null)
        {
            return VoidResult.Ignore(InvokeAsync<TArguments, VoidResult>(methodId, arguments, cancellationToken));
        }

        CallDeadline deadline = _settings.FixDeadline(0, out long now);
        _retryBudget?.Deposit(now != 0 ? now : Clock.GetTimestamp()); // 0: no deadline, so the clock was not read.
        byte[]? metadata = _settings.EncodedMetadata;
        ValueTask call = connection.Outgoing.InvokeAsync(methodId, arguments, deadline, now, cancellationToken, metadata);
        return call.IsCompletedSuccessfully || !Retries
            ? call
            : RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, metadata, cancellationToken);
    }

    public IAsyncEnumerable<TResult> InvokeServerStream<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
        => ReceiveStream<TArguments, TResult, TResult>(methodId, arguments, null, cancellationToken);

    public IAsyncEnumerable<TResult> InvokeDuplexStream<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return ReceiveStream<TArguments, TItem, TResult>(methodId, arguments, items, cancellationToken);
    }

    public ValueTask<TResult> InvokeClientStreamAsync<TArguments, TItem, TResult>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ArgumentNullException.ThrowIfNull(items);
        return _interceptors.Length == 0
            ? OutgoingStreamCall.SendAsync<TArguments, TItem, TResult>(this, methodId, arguments, items, _settings.EncodedMetadata, cancellationToken)
            : new ClientStreamChain<TArguments, TItem, TResult>(this, NewCall(methodId, cancellationToken), methodId, arguments, items).RunAsync();
    }

    public ValueTask InvokeClientStreamAsync<TArguments, TItem>(
        uint methodId, TArguments arguments, IAsyncEnumerable<TItem> items, CancellationToken cancellationToken)
        where TArguments : struct
        => VoidResult.Ignore(InvokeClientStreamAsync<TArguments, TItem, VoidResult>(methodId, arguments, items, cancellationToken));

    /// <summary>Sends a call on the current connection, or on the next when it waits.</summary>
    private ValueTask<TResult> SendAsync<TArguments, TResult>(
        uint methodId, in TArguments arguments, in CallDeadline deadline, long now, byte[]? metadata, CancellationToken cancellationToken)
        where TArguments : struct
    {
        _retryBudget?.Deposit(now != 0 ? now : Clock.GetTimestamp()); // 0: no deadline, so the clock was not read.
        ClientConnection? connection = _keeper.Current;
        if (connection is null)
        {
            return WaitsForNext
                ? SendOnNextConnectionAsync<TArguments, TResult>(null, null, methodId, arguments, deadline, metadata, cancellationToken)
                : ValueTask.FromException<TResult>(NotConnected(methodId));
        }

        ValueTask<TResult> call = connection.Outgoing.InvokeAsync<TArguments, TResult>(
            methodId, arguments, deadline, now, cancellationToken, null, metadata);
        return call.IsCompletedSuccessfully || !Retries
            ? call
            : RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, metadata, cancellationToken);
    }

    /// <summary>Whether a call that found no connection waits for the next: when it waits, and on a client that will have none again, whose
    /// wait fails at once with why instead of a "safe to retry" that never ends.</summary>
    private bool WaitsForNext => _settings.WaitsForConnection || _keeper.IsEnded;

    /// <summary>A call that does not wait, made while no connection is up: nothing was sent, so it is safe to retry.</summary>
    private MuxConnectionException NotConnected(uint methodId)
    {
        ClientConnection? latest = _keeper.Latest;
        return MuxConnectionException.NotRun(
            $"The Mux client has no connection to {_runtime.RemoteEndPoint?.ToString() ?? "its servers"} right now (it is {_keeper.State}), " +
            $"and the call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} does not wait for one (WaitForConnection is false); " +
            $"it was not sent, so it is safe to retry.{ConnectionSource.DescribeClose(latest)}",
            latest?.CloseReason ?? MuxCloseReason.None,
            latest is { IsClosed: true } ? latest.CloseError : null);
    }

    /// <summary>Whether a call that did not complete at once may be sent again: only within a budget (see <see cref="SendsAgain"/>).</summary>
    private bool Retries => _retryBudget is not null;

    /// <summary>Whether <paramref name="failure"/> says the server never ran the call, nor any of it, so that it may go again within the
    /// budget: left unsent by a connection the client replaces, or refused.</summary>
    private bool SendsAgain(Exception failure) =>
        _retryBudget is not null && failure switch
        {
            MuxConnectionException notRun => notRun.IsSafeToRetry && _keeper.Reconnects,
            MuxRemoteException { StatusCode: MuxStatusCode.Overloaded or MuxStatusCode.TooManyCalls or MuxStatusCode.ServerShuttingDown } => true,
            _ => false,
        };

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<TResult> RetryIfNotRunAsync<TArguments, TResult>(
        ValueTask<TResult> call, ClientConnection connection, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata,
        CancellationToken cancellationToken)
        where TArguments : struct
    {
        try
        {
            return await call.ConfigureAwait(false);
        }
        catch (Exception ex) when (SendsAgain(ex))
        {
            return await SendAgainAsync<TArguments, TResult>(connection, ex, methodId, arguments, deadline, metadata, cancellationToken)
                .ConfigureAwait(false);
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask RetryIfNotRunAsync<TArguments>(
        ValueTask call, ClientConnection connection, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata,
        CancellationToken cancellationToken)
        where TArguments : struct
    {
        try
        {
            await call.ConfigureAwait(false);
        }
        catch (Exception ex) when (SendsAgain(ex))
        {
            await SendAgainAsync<TArguments, VoidResult>(connection, ex, methodId, arguments, deadline, metadata, cancellationToken)
                .ConfigureAwait(false);
        }
    }

    /// <summary>Sends again a call <paramref name="connection"/> left unsent (on the next connection) or refused.</summary>
    private ValueTask<TResult> SendAgainAsync<TArguments, TResult>(
        ClientConnection connection, Exception notRun, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata,
        CancellationToken cancellationToken)
        where TArguments : struct
        => notRun is MuxRemoteException refusal
            ? RetryRefusedAsync<TArguments, TResult>(connection, refusal, methodId, arguments, deadline, metadata, cancellationToken)
            : SendOnNextConnectionAsync<TArguments, TResult>(
                connection, ExceptionDispatchInfo.Capture(notRun), methodId, arguments, deadline, metadata, cancellationToken);

    /// <summary>Sends again a call the server refused unrun, if the budget has a retry: on another instance when the client has one, within
    /// the call's own deadline. Past the budget the call fails at once, as Overloaded.</summary>
    private async ValueTask<TResult> RetryRefusedAsync<TArguments, TResult>(
        ClientConnection refusedBy, MuxRemoteException refusal, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata,
        CancellationToken cancellationToken)
        where TArguments : struct
    {
        long now = Clock.GetTimestamp();
        refusedBy.OnRefused(now);
        if (!_retryBudget!.TryWithdraw(now))
        {
            throw BudgetSpent(refusal, methodId);
        }

        ClientConnection? next = _keeper.ForRetry(refusedBy);
        if (next is null)
        {
            // No connection now: wait for one as a new call would (the withdrawal is spent), or fail with the refusal.
            return await SendOnNextConnectionAsync<TArguments, TResult>(
                null, ExceptionDispatchInfo.Capture(refusal), methodId, arguments, deadline, metadata, cancellationToken).ConfigureAwait(false);
        }

        ValueTask<TResult> call =
            next.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(Clock), cancellationToken, null, metadata);
        return await RetryIfNotRunAsync(call, next, methodId, arguments, deadline, metadata, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The failure of a call the server never ran and the budget does not send again.</summary>
    private static MuxRemoteException BudgetSpent(Exception notRun, uint methodId) => new(
        MuxStatusCode.Overloaded,
        $"{MuxServiceRegistry.GetMethodDisplayName(methodId)} was not run: {notRun.Message} The client did not send it again: its retry budget " +
        "(MuxClientOptions.RetryBudget) is spent, as happens when servers refuse more calls than they serve. The call never ran; it is safe to " +
        "retry later.",
        null);

    /// <summary>Sends a call on the next connection within its deadline: one made while none was up, or one the server never ran on
    /// <paramref name="failed"/>. A call that does not wait takes one already up other than
    /// <paramref name="failed"/>, or fails with <paramref name="notRun"/>.</summary>
    private async ValueTask<TResult> SendOnNextConnectionAsync<TArguments, TResult>(
        ClientConnection? failed, ExceptionDispatchInfo? notRun, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata,
        CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection? connection = WaitsForNext
            ? await _keeper.WaitForConnectionAsync(failed, deadline.At, deadline.OwnTimeout, forCall: true, cancellationToken).ConfigureAwait(false)
            : _keeper.Current;
        if (connection is null || connection == failed)
        {
            notRun!.Throw(); // A call that waits never gets here: the wait gives it another connection or throws.
        }

        if (failed is not null && !_retryBudget!.TryWithdraw(Clock.GetTimestamp()))
        {
            // Sent once and left unsent by its connection: a second send spends from the budget like any retry.
            throw BudgetSpent(notRun!.SourceException, methodId);
        }

        ValueTask<TResult> call = connection.Outgoing.InvokeAsync<TArguments, TResult>(
            methodId, arguments, deadline, deadline.Now(Clock), cancellationToken, null, metadata);
        return await (Retries ? RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, metadata, cancellationToken) : call)
            .ConfigureAwait(false);
    }

    // As a CallSource: where this invoker's streaming calls find their connection. A stream cannot be replayed, so it is never resent.
    public override OutgoingCalls? CurrentCalls => _keeper.Current?.Outgoing;

    public override ValueTask<Exception> WhyNotRunAsync(MuxConnectionException notRun) => _keeper.IsEnded ? WhyEndedAsync(notRun) : new(notRun);

    protected override ValueTask<OutgoingCalls> NextAsync(uint methodId, CancellationToken cancellationToken) =>
        WaitsForNext ? WaitAsync(cancellationToken) : ValueTask.FromException<OutgoingCalls>(NotConnected(methodId));

    private async ValueTask<OutgoingCalls> WaitAsync(CancellationToken cancellationToken)
    {
        long deadline = ClockDeadline.After(Clock.GetTimestamp(), _settings.Timeout);
        ClientConnection connection =
            await _keeper.WaitForConnectionAsync(null, deadline, _settings.OwnTimeout, forCall: true, cancellationToken).ConfigureAwait(false);
        return connection.Outgoing;
    }

    /// <summary>Why a streaming call failed unsent on a client that will have no connection again: the error of a wait for one, as for a
    /// unary call. Should a connection come after all, the call still fails as it did.</summary>
    private async ValueTask<Exception> WhyEndedAsync(MuxConnectionException notRun)
    {
        try
        {
            await _keeper.WaitForConnectionAsync(null, ClockDeadline.Never, null, forCall: false, CancellationToken.None).ConfigureAwait(false);
        }
        catch (MuxConnectionException ended)
        {
            return ended;
        }

        return notRun;
    }
}
