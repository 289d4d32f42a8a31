namespace Mux.Tests.Server;

/// <summary>Handlers that hold on to their CancellationToken after they return, as a handler that
/// hands its token to background work does (<see cref="KeptTokenService"/>).</summary>
[MuxService]
public interface IKeptTokenService
{
    /// <summary>Keeps its token under <paramref name="id"/> and returns at once.</summary>
    Task Keep(int id, CancellationToken cancellationToken = default);

    /// <summary>Waits until its token fires, then ends with it.</summary>
    Task WaitForCancel(CancellationToken cancellationToken = default);
}
