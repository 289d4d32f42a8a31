namespace Mux.Tests.Server;

/// <summary>Handlers that count their runs by a caller-chosen id and hold until the test releases them.</summary>
[MuxService]
public interface IAdmissionService
{
    /// <summary>Runs until <see cref="AdmissionService.ReleaseHeld"/> (or its token fires), then returns <paramref name="id"/>.</summary>
    Task<int> Hold(int id, CancellationToken cancellationToken = default);

    /// <summary>Counts the run and returns <paramref name="id"/> at once.</summary>
    Task<int> Echo(int id);

    /// <summary>Like <see cref="Hold"/>, then throws InvalidOperationException.</summary>
    Task HoldThenThrow(int id);

    /// <summary>Yields <paramref name="id"/>, holds like <see cref="Hold"/>, then yields it again.</summary>
    IAsyncEnumerable<int> HoldStream(int id, CancellationToken cancellationToken = default);
}
