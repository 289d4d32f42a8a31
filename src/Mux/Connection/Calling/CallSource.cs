namespace Mux.Connection;

/// <summary>Where a streaming call finds its connection: a client's current one, waiting for the next when none is up and the call waits,
/// or the one connection a server's calls to its client go on.</summary>
internal abstract class CallSource
{
    /// <summary>The calls of the connection up now; null when none is.</summary>
    public abstract OutgoingCalls? CurrentCalls { get; }

    /// <exception cref="MuxConnectionException">No connection came in time, or none is up and the call does not wait.</exception>
    public ValueTask<OutgoingCalls> GetOutgoingCallsAsync(uint methodId, CancellationToken cancellationToken) =>
        CurrentCalls is { } calls ? new ValueTask<OutgoingCalls>(calls) : NextAsync(methodId, cancellationToken);

    /// <summary>What a call its connection failed unsent fails with: <paramref name="notRun"/>, safe to retry, unless no call gets a
    /// connection here again (a <see cref="MuxClient"/> being disposed): then why, since a retry would send nothing.</summary>
    public virtual ValueTask<Exception> WhyNotRunAsync(MuxConnectionException notRun) => new(notRun);

    /// <summary>The calls of the next connection, for a call that found none up.</summary>
    protected abstract ValueTask<OutgoingCalls> NextAsync(uint methodId, CancellationToken cancellationToken);
}

/// <summary>A server's calls to its client: its one connection is there or gone, and nothing is sent again.</summary>
internal sealed class PeerCallSource(OutgoingCalls calls) : CallSource
{
    public override OutgoingCalls? CurrentCalls => calls;

    protected override ValueTask<OutgoingCalls> NextAsync(uint methodId, CancellationToken cancellationToken) => new(calls);
}
