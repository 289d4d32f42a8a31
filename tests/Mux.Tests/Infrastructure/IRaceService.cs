namespace Mux.Tests.Infrastructure;

/// <summary>The contract of the race tests: every call carries an id the handler answers with, so
/// a result delivered to the wrong caller is caught. Mux generates its proxy and dispatcher.</summary>
[MuxService]
public interface IRaceService
{
    /// <summary>Waits <paramref name="delayMilliseconds"/> (0: answers at once; negative: until its
    /// token is cancelled), then returns <paramref name="id"/>.</summary>
    Task<int> Respond(int id, int delayMilliseconds, CancellationToken cancellationToken = default);

    /// <summary>Waits until the test releases <paramref name="id"/> or its token is cancelled;
    /// records which of the two happened.</summary>
    Task<int> Hold(int id, CancellationToken cancellationToken = default);

    /// <summary>Counts itself among the handlers running now, waits for the test to let one
    /// handler go, then returns <paramref name="id"/>.</summary>
    Task<int> Occupy(int id);
}
