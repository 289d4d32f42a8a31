using System.Runtime.CompilerServices;
using Mux.Connection;

namespace Mux.Client;

/// <summary>
/// The path of a call made through a <see cref="MuxClient"/>. Its deadline is fixed once, here,
/// when the user makes it; then it goes to the current connection, waits for one when none is up,
/// and is sent again on the next connection when the server provably never ran it
/// (<see cref="MuxConnectionException.IsSafeToRetry"/>). Every wait and any resend spend from that
/// one deadline, so a call whose deadline passed while it waited is not sent again.
/// </summary>
/// <remarks>
/// A call that is not complete when it returns goes through <c>RetryIfNotRunAsync</c>, so its
/// state machine box comes from a pool (<see cref="PoolingAsyncValueTaskMethodBuilder{TResult}"/>)
/// rather than a fresh allocation per call: in steady state a call still allocates nothing.
/// Arguments are kept by value in that box until the call completes, so that a retry can write
/// them again; a retry happens at most once per connection.
/// </remarks>
internal sealed partial class ClientRuntime
{
    /// <summary>Calls a method and returns its result (see MuxClient.InvokeAsync).</summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        // The one place a call's deadline is fixed: every wait and any resend spend from it.
        CallDeadline deadline = CallDeadline.Fix(_clock, _callTimeout, out long now);
        ClientConnection? connection = _keeper.Current;
        if (connection is null)
        {
            return InvokeWhenConnectedAsync<TArguments, TResult>(methodId, arguments, deadline, cancellationToken);
        }

        ValueTask<TResult> call = connection.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken);
        return call.IsCompletedSuccessfully || !_keeper.Reconnects
            ? call
            : RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, cancellationToken);
    }

    /// <summary>Calls a method that returns no value (see MuxClient.InvokeAsync).</summary>
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        CallDeadline deadline = CallDeadline.Fix(_clock, _callTimeout, out long now);
        ClientConnection? connection = _keeper.Current;
        if (connection is null)
        {
            return InvokeWhenConnectedAsync(methodId, arguments, deadline, cancellationToken);
        }

        ValueTask call = connection.Outgoing.InvokeAsync(methodId, arguments, deadline, now, cancellationToken);
        return call.IsCompletedSuccessfully || !_keeper.Reconnects
            ? call
            : RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, cancellationToken);
    }

    /// <summary>The calls of the connection a streaming call runs on: the current one, or the next
    /// one (within CallTimeout). A streaming call is never retried: its stream cannot be replayed.</summary>
    public ValueTask<OutgoingCalls> GetOutgoingCallsAsync(CancellationToken cancellationToken) =>
        _keeper.Current is { } connection ? new ValueTask<OutgoingCalls>(connection.Outgoing) : WaitForOutgoingCallsAsync(cancellationToken);

    private async ValueTask<OutgoingCalls> WaitForOutgoingCallsAsync(CancellationToken cancellationToken)
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, ClockDeadline.After(_clock.GetTimestamp(), _callTimeout), cancellationToken).ConfigureAwait(false);
        return connection.Outgoing;
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<TResult> RetryIfNotRunAsync<TArguments, TResult>(ValueTask<TResult> call, ClientConnection connection, uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        while (true)
        {
            try
            {
                return await call.ConfigureAwait(false);
            }
            catch (MuxConnectionException ex) when (ex.IsSafeToRetry)
            {
                // The server never ran it: send it again on the next connection.
            }

            connection = await _keeper.WaitForConnectionAsync(connection, deadline.At, cancellationToken).ConfigureAwait(false);
            call = connection.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask RetryIfNotRunAsync<TArguments>(ValueTask call, ClientConnection connection, uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        while (true)
        {
            try
            {
                await call.ConfigureAwait(false);
                return;
            }
            catch (MuxConnectionException ex) when (ex.IsSafeToRetry)
            {
                // The server never ran it: send it again on the next connection.
            }

            connection = await _keeper.WaitForConnectionAsync(connection, deadline.At, cancellationToken).ConfigureAwait(false);
            call = connection.Outgoing.InvokeAsync(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        }
    }

    /// <summary>A call made while no connection is up: waits for one (within the call's deadline
    /// and token), then runs as usual.</summary>
    private async ValueTask<TResult> InvokeWhenConnectedAsync<TArguments, TResult>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, deadline.At, cancellationToken).ConfigureAwait(false);
        ValueTask<TResult> call = connection.Outgoing.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        return await (_keeper.Reconnects ? RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, cancellationToken) : call).ConfigureAwait(false);
    }

    private async ValueTask InvokeWhenConnectedAsync<TArguments>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, deadline.At, cancellationToken).ConfigureAwait(false);
        ValueTask call = connection.Outgoing.InvokeAsync(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        await (_keeper.Reconnects ? RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, cancellationToken) : call).ConfigureAwait(false);
    }
}
