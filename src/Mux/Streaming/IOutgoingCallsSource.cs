using Mux.Connection;

namespace Mux.Streaming;

/// <summary>Where a streaming call goes: a <see cref="MuxClient"/>'s current connection (waiting for one when none is up),
/// or a <see cref="MuxRemoteClient"/>'s.</summary>
internal interface IOutgoingCallsSource
{
    /// <exception cref="MuxConnectionException">No connection came in time, or none is up and the call does not wait.</exception>
    /// <exception cref="NotSupportedException">The peer does not take streams on such calls.</exception>
    ValueTask<OutgoingCalls> GetOutgoingCallsAsync(uint methodId, CancellationToken cancellationToken);

    /// <summary>What a call its connection failed unsent fails with: <paramref name="notRun"/> (safe to retry), unless no call
    /// gets a connection here again (a <see cref="MuxClient"/> being disposed), when it is why: a retry would send nothing.</summary>
    ValueTask<Exception> WhyNotRunAsync(MuxConnectionException notRun) => new(notRun);
}
