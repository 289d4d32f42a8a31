namespace Mux.Tests.Streaming;

/// <summary>Streams that end in an error long enough to go in fragments, served by a server or by a
/// client for its server's calls.</summary>
[MuxService]
public interface IFailingStreams
{
    /// <summary>Streams 0 .. count-1, then fails with a <see cref="MuxRemoteException"/> whose
    /// message is <see cref="FailingStreams.Message"/> of <paramref name="messageLength"/>.</summary>
    IAsyncEnumerable<int> ItemsThenFailure(int count, int messageLength);

    /// <summary>Runs until the test releases it (FailingStreams.ReleaseHold).</summary>
    Task Hold();
}
