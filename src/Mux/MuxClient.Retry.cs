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
/// them again; a retry happens at most once per connection, and never after the call's
/// <see cref="MuxClientOptions.CallTimeout"/> has passed.
/// </remarks>
public sealed partial class MuxClient
{
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<TResult> RetryIfNotRunAsync<TArguments, TResult>(ValueTask<TResult> call, ClientConnection connection, uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        long deadline = Deadline();
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

            connection = await _keeper.WaitForConnectionAsync(connection, deadline, cancellationToken).ConfigureAwait(false);
            call = connection.InvokeAsync<TArguments, TResult>(methodId, arguments, cancellationToken);
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask RetryIfNotRunAsync<TArguments>(ValueTask call, ClientConnection connection, uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        long deadline = Deadline();
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

            connection = await _keeper.WaitForConnectionAsync(connection, deadline, cancellationToken).ConfigureAwait(false);
            call = connection.InvokeAsync(methodId, arguments, cancellationToken);
        }
    }

    /// <summary>A call made while no connection is up: waits for one (within the call's timeout
    /// and token), then runs as usual.</summary>
    private async ValueTask<TResult> InvokeWhenConnectedAsync<TArguments, TResult>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, Deadline(), cancellationToken).ConfigureAwait(false);
        ValueTask<TResult> call = connection.InvokeAsync<TArguments, TResult>(methodId, arguments, cancellationToken);
        return await (_keeper.Reconnects ? RetryIfNotRunAsync(call, connection, methodId, arguments, cancellationToken) : call).ConfigureAwait(false);
    }

    private async ValueTask InvokeWhenConnectedAsync<TArguments>(uint methodId, TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        ClientConnection connection = await _keeper.WaitForConnectionAsync(null, Deadline(), cancellationToken).ConfigureAwait(false);
        ValueTask call = connection.InvokeAsync(methodId, arguments, cancellationToken);
        await (_keeper.Reconnects ? RetryIfNotRunAsync(call, connection, methodId, arguments, cancellationToken) : call).ConfigureAwait(false);
    }

    private long Deadline() => _callTimeoutMs < 0 ? long.MaxValue : Environment.TickCount64 + _callTimeoutMs;
}
