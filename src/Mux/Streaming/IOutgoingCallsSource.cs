using Mux.Connection;

namespace Mux.Streaming;

/// <summary>Where a streaming call goes: the current connection of a <see cref="MuxClient"/>
/// (waiting for one when none is up), or the connection of a <see cref="MuxRemoteClient"/>.</summary>
internal interface IOutgoingCallsSource
{
    /// <summary>The calls of the connection the streaming call (to <paramref name="methodId"/>) runs
    /// on, once it is there.</summary>
    /// <exception cref="MuxConnectionException">No connection came within the call's timeout, or
    /// there is none and the call does not wait for one.</exception>
    /// <exception cref="NotSupportedException">The peer does not take streams on such calls.</exception>
    ValueTask<OutgoingCalls> GetOutgoingCallsAsync(uint methodId, CancellationToken cancellationToken);

    /// <summary>What a streaming call fails with when its connection failed it unsent
    /// (<paramref name="notRun"/>, safe to retry): that, unless no call gets a connection here
    /// again (a <see cref="MuxClient"/> being disposed, say), when it is why (a caller that retries
    /// on "safe to retry" would retry on a client that sends nothing again). Only a call that
    /// failed asks.</summary>
    ValueTask<Exception> WhyNotRunAsync(MuxConnectionException notRun) => new(notRun);
}
