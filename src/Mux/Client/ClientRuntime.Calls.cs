using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Mux.Connection;
using Mux.Serialization;

namespace Mux.Client;

/// <summary>
/// The path of a client's call: its deadline fixed once when the user makes it, then the current connection, a wait for
/// one when none is up, and a resend when the server provably never ran it, within the client's <see cref="RetryBudget"/>:
/// on the next connection when its own left it unsent, on another instance (or the same one) when the server refused it as
/// Overloaded or TooManyCalls. Every wait and resend spend from that one deadline. A bound proxy's
/// <see cref="CallSettings"/> replace the client's timeout, metadata and wait.
/// </summary>
/// <remarks>
/// A call not complete when it returns goes through <c>RetryIfNotRunAsync</c>, whose state machine comes from a pool, so a
/// call allocates nothing in steady state; it keeps the arguments by value so a resend can write them again.
/// </remarks>
internal sealed partial class ClientRuntime
{
    /// <summary>Calls a method; <paramref name="settings"/> are the bound proxy's, or null.</summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CallSettings? settings, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (_interceptors.Length != 0)
        {
            return InterceptAsync<TArguments, TResult>(methodId, arguments, settings, cancellationToken);
        }

        // The one place a call's deadline is fixed: every wait and any resend spend from it.
        CallDeadline deadline = CallDeadline.Fix(_clock, TimeoutOf(settings), settings?.Timeout, inherits: true, 0, out long now);
        return SendAsync<TArguments, TResult>(methodId, arguments, deadline, now, settings?.EncodedMetadata, WaitsForConnection(settings), cancellationToken);
    }

    /// <summary>Calls a method that returns no value (see MuxClient.InvokeAsync).</summary>
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CallSettings? settings, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (_interceptors.Length != 0)
        {
            return VoidResult.Ignore(InterceptAsync<TArguments, VoidResult>(methodId, arguments, settings, cancellationToken));
        }

        CallDeadline deadline = CallDeadline.Fix(_clock, TimeoutOf(settings), settings?.Timeout, inherits: true, 0, out long now);
        return SendAsync(methodId, arguments, deadline, now, settings?.EncodedMetadata, WaitsForConnection(settings), cancellationToken);
    }

    /// <summary>The call's timeout in the clock's units: the bound proxy's, else CallTimeout.</summary>
    private long TimeoutOf(CallSettings? settings) =>
        settings?.Timeout is { } timeout ? ClockDeadline.ToTimestampSpan(_clock, timeout) : _callTimeout;

    /// <summary>Whether the call waits for a connection: the bound proxy's say, else the client's.</summary>
    private bool WaitsForConnection(CallSettings? settings) => settings?.WaitForConnection ?? _waitForConnection;

    /// <summary>Sends a call on the current connection, or on the next when it <paramref name="waits"/>.</summary>
    private ValueTask<TResult> SendAsync<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, byte[]? metadata, bool waits, CancellationToken cancellationToken)
        where TArguments : struct
    {
        _retryBudget?.Deposit(now != 0 ? now : _clock.GetTimestamp()); // 0: no deadline, so the clock was not read.
        ClientConnection? connection = Keeper.Current;
        if (connection is null)
        {
            return WaitsForNext(waits)
                ? SendOnNextConnectionAsync<TArguments, TResult>(null, null, methodId, arguments, deadline, metadata, waits: true, cancellationToken)
                : ValueTask.FromException<TResult>(NotConnected(methodId));
        }

        ValueTask<TResult> call = connection.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken, metadata: metadata);
        return call.IsCompletedSuccessfully || !Retries
            ? call
            : RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, metadata, waits, cancellationToken);
    }

    private ValueTask SendAsync<TArguments>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, byte[]? metadata, bool waits, CancellationToken cancellationToken)
        where TArguments : struct
    {
        _retryBudget?.Deposit(now != 0 ? now : _clock.GetTimestamp()); // 0: no deadline, so the clock was not read.
        ClientConnection? connection = Keeper.Current;
        if (connection is null)
        {
            // Waiting for a connection is the rare path: it goes the way of a call with a result.
            return WaitsForNext(waits)
                ? VoidResult.Ignore(SendOnNextConnectionAsync<TArguments, VoidResult>(null, null, methodId, arguments, deadline, metadata, waits: true, cancellationToken))
                : ValueTask.FromException(NotConnected(methodId));
        }

        ValueTask call = connection.Outgoing.InvokeAsync(methodId, arguments, deadline, now, cancellationToken, metadata);
        return call.IsCompletedSuccessfully || !Retries
            ? call
            : RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, metadata, waits, cancellationToken);
    }

    /// <summary>Where a streaming call with <paramref name="settings"/> finds its connection.</summary>
    private CallSource SourceFor(CallSettings? settings) =>
        settings is null ? _defaultSource : new CallsSource(this, TimeoutOf(settings), settings.Timeout, WaitsForConnection(settings));

    /// <summary>Whether a call that found no connection waits for the next: when it <paramref name="waits"/>, and on a
    /// client that will have none again, whose wait fails at once with why instead of a "safe to retry" that never ends.</summary>
    private bool WaitsForNext(bool waits) => waits || Keeper.IsEnded;

    /// <summary>A call that does not wait, made while no connection is up: nothing was sent, so it is safe to retry.</summary>
    private MuxConnectionException NotConnected(uint methodId)
    {
        ClientConnection? latest = Keeper.Latest;
        return MuxConnectionException.NotRun(
            $"The Mux client has no connection to {RemoteEndPoint?.ToString() ?? "its servers"} right now (it is {Keeper.State}), and the call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} does not wait for one (WaitForConnection is false); it was not sent, so it is safe to retry.{ConnectionSource.DescribeClose(latest)}",
            latest?.CloseReason ?? MuxCloseReason.None,
            latest is { IsClosed: true } ? latest.CloseError : null);
    }

    /// <summary>Whether a call that did not complete at once may be sent again: a refusal within the budget, or a call the
    /// server never ran on a connection the client replaces.</summary>
    private bool Retries => _retryBudget is not null || Keeper.Reconnects;

    /// <summary>A status that says the server did not run the call, nor any of it: it may go again, within the budget.</summary>
    private static bool IsRefusedUnrun(MuxStatusCode status) =>
        status is MuxStatusCode.Overloaded or MuxStatusCode.TooManyCalls or MuxStatusCode.ServerShuttingDown;

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<TResult> RetryIfNotRunAsync<TArguments, TResult>(ValueTask<TResult> call, ClientConnection connection, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata, bool waits, CancellationToken cancellationToken)
        where TArguments : struct
    {
        try
        {
            return await call.ConfigureAwait(false);
        }
        catch (MuxConnectionException ex) when (ex.IsSafeToRetry && _retryBudget is not null && Keeper.Reconnects)
        {
            // The server never ran it: send it again on the next connection.
            return await SendOnNextConnectionAsync<TArguments, TResult>(connection, ExceptionDispatchInfo.Capture(ex), methodId, arguments, deadline, metadata, waits, cancellationToken).ConfigureAwait(false);
        }
        catch (MuxRemoteException ex) when (_retryBudget is not null && IsRefusedUnrun(ex.StatusCode))
        {
            return await RetryRefusedAsync<TArguments, TResult>(connection, ex, methodId, arguments, deadline, metadata, waits, cancellationToken).ConfigureAwait(false);
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask RetryIfNotRunAsync<TArguments>(ValueTask call, ClientConnection connection, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata, bool waits, CancellationToken cancellationToken)
        where TArguments : struct
    {
        try
        {
            await call.ConfigureAwait(false);
        }
        catch (MuxConnectionException ex) when (ex.IsSafeToRetry && _retryBudget is not null && Keeper.Reconnects)
        {
            // The server never ran it: send it again on the next connection, the way of a call with a result.
            await SendOnNextConnectionAsync<TArguments, VoidResult>(connection, ExceptionDispatchInfo.Capture(ex), methodId, arguments, deadline, metadata, waits, cancellationToken).ConfigureAwait(false);
        }
        catch (MuxRemoteException ex) when (_retryBudget is not null && IsRefusedUnrun(ex.StatusCode))
        {
            await RetryRefusedAsync<TArguments, VoidResult>(connection, ex, methodId, arguments, deadline, metadata, waits, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Sends again a call the server refused unrun, if the budget has a retry: on another instance when the client
    /// has one, within the call's own deadline. Past the budget the call fails at once, as Overloaded.</summary>
    private async ValueTask<TResult> RetryRefusedAsync<TArguments, TResult>(ClientConnection refusedBy, MuxRemoteException refusal, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata, bool waits, CancellationToken cancellationToken)
        where TArguments : struct
    {
        long now = _clock.GetTimestamp();
        refusedBy.OnRefused(now);
        if (!_retryBudget!.TryWithdraw(now))
        {
            throw BudgetSpent(refusal, methodId);
        }

        ClientConnection? next = Keeper.ForRetry(refusedBy);
        if (next is null)
        {
            // No connection now: wait for one as a new call would (the withdrawal is spent), or fail with the refusal.
            return await SendOnNextConnectionAsync<TArguments, TResult>(null, ExceptionDispatchInfo.Capture(refusal), methodId, arguments, deadline, metadata, waits, cancellationToken).ConfigureAwait(false);
        }

        ValueTask<TResult> call = next.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken, metadata: metadata);
        return await RetryIfNotRunAsync(call, next, methodId, arguments, deadline, metadata, waits, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The failure of a call the server never ran and the budget does not send again.</summary>
    private static MuxRemoteException BudgetSpent(Exception notRun, uint methodId) => new(
        MuxStatusCode.Overloaded,
        $"{MuxServiceRegistry.GetMethodDisplayName(methodId)} was not run: {notRun.Message} The client did not send it again: its retry budget " +
        "(MuxClientOptions.RetryBudget) is spent, as happens when servers refuse more calls than they serve. The call never ran; it is safe to " +
        "retry later.",
        null);

    /// <summary>Sends a call on the next connection within its deadline: one made while none was up, or one the server
    /// never ran on <paramref name="failed"/>. A call that does not wait takes one already up other than
    /// <paramref name="failed"/>, or fails with <paramref name="notRun"/>.</summary>
    private async ValueTask<TResult> SendOnNextConnectionAsync<TArguments, TResult>(ClientConnection? failed, ExceptionDispatchInfo? notRun, uint methodId, TArguments arguments, CallDeadline deadline, byte[]? metadata, bool waits, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection? connection = WaitsForNext(waits)
            ? await Keeper.WaitForConnectionAsync(failed, deadline.At, deadline.OwnTimeout, forCall: true, cancellationToken).ConfigureAwait(false)
            : Keeper.Current;
        if (connection is null || connection == failed)
        {
            notRun!.Throw(); // A call that waits never gets here: the wait gives it another connection or throws.
        }

        if (failed is not null && !_retryBudget!.TryWithdraw(_clock.GetTimestamp()))
        {
            // Sent once and left unsent by its connection: a second send spends from the budget like any retry.
            throw BudgetSpent(notRun!.SourceException, methodId);
        }

        ValueTask<TResult> call = connection.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken, metadata: metadata);
        return await (Retries ? RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, metadata, waits, cancellationToken) : call).ConfigureAwait(false);
    }

    /// <summary>Why a streaming call failed unsent on a client that will have no connection again: the error of a wait
    /// for one, as for a unary call. Should a connection come after all, the call still fails as it did.</summary>
    private async ValueTask<Exception> WhyEndedAsync(MuxConnectionException notRun)
    {
        try
        {
            await Keeper.WaitForConnectionAsync(null, ClockDeadline.Never, null, forCall: false, CancellationToken.None).ConfigureAwait(false);
        }
        catch (MuxConnectionException ended)
        {
            return ended;
        }

        return notRun;
    }

    /// <summary>Where a streaming call finds its connection: the current one, or the next within
    /// <paramref name="timeout"/> when it <paramref name="waits"/>. A stream cannot be replayed, so it is never resent.</summary>
    private sealed class CallsSource(ClientRuntime runtime, long timeout, TimeSpan? ownTimeout, bool waits) : CallSource
    {
        public override OutgoingCalls? CurrentCalls => runtime.Keeper.Current?.Outgoing;

        public override ValueTask<Exception> WhyNotRunAsync(MuxConnectionException notRun) =>
            runtime.Keeper.IsEnded ? runtime.WhyEndedAsync(notRun) : new(notRun);

        protected override ValueTask<OutgoingCalls> NextAsync(uint methodId, CancellationToken cancellationToken) =>
            runtime.WaitsForNext(waits) ? WaitAsync(cancellationToken) : ValueTask.FromException<OutgoingCalls>(runtime.NotConnected(methodId));

        private async ValueTask<OutgoingCalls> WaitAsync(CancellationToken cancellationToken)
        {
            long deadline = ClockDeadline.After(runtime._clock.GetTimestamp(), timeout);
            ClientConnection connection = await runtime.Keeper.WaitForConnectionAsync(null, deadline, ownTimeout, forCall: true, cancellationToken)
                .ConfigureAwait(false);
            return connection.Outgoing;
        }
    }
}
