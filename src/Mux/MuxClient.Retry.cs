using System.Runtime.CompilerServices;
using Mux.Client;

namespace Mux;

/// <summary>
/// The slow paths of a call when the client reconnects: waiting for a connection, and sending
/// again a call the server provably never ran (<see cref="MuxConnectionException.IsSafeToRetry"/>).
/// </summary>
/// <remarks>
/// A call that is not complete when it returns goes through <c>RetryIfNotRunAsync</c>, so its
/// state machine box comes from a pool (<see cref="PoolingAsyncValueTaskMethodBuilder{TResult}"/>)
/// rather than a fresh allocation per call: in steady state a call still allocates nothing.
/// Arguments are kept by value in that box until the call completes, so that a retry can write
/// them again; a retry happens at most once per connection, and spends from the deadline the call
/// was given when it was made (<see cref="CallDeadline"/>): a call whose deadline passed while it
/// waited is not sent again.
/// </remarks>
public sealed partial class MuxClient
{
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
            call = connection.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
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
            call = connection.InvokeAsync(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        }
    }

    /// <summary>A call made while no connection is up: waits for one (within the call's deadline
    /// and token), then runs as usual.</summary>
    private async ValueTask<TResult> InvokeWhenConnectedAsync<TArguments, TResult>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, deadline.At, cancellationToken).ConfigureAwait(false);
        ValueTask<TResult> call = connection.InvokeAsync<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        return await (_keeper.Reconnects ? RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, cancellationToken) : call).ConfigureAwait(false);
    }

    private async ValueTask InvokeWhenConnectedAsync<TArguments>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, deadline.At, cancellationToken).ConfigureAwait(false);
        ValueTask call = connection.InvokeAsync(methodId, arguments, deadline, deadline.Now(_clock), cancellationToken);
        await (_keeper.Reconnects ? RetryIfNotRunAsync(call, connection, methodId, arguments, deadline, cancellationToken) : call).ConfigureAwait(false);
    }
}
