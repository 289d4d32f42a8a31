namespace Mux.Tests.Infrastructure;

/// <summary>The contract the tests call. Mux generates its proxy and dispatcher.</summary>
[MuxService]
public interface ITestService
{
    ValueTask<int> Add(int a, int b);

    Task<string> Echo(string text, CancellationToken cancellationToken = default);

    /// <summary>Waits <paramref name="milliseconds"/> (asynchronously), then returns <paramref name="value"/>.</summary>
    Task<int> Delay(int milliseconds, int value);

    /// <summary>Throws InvalidOperationException with the given message.</summary>
    Task Throw(string message);

    /// <summary>Blocks its thread until the test opens the gate (or 10 s pass), then returns the id.</summary>
    Task<int> Block(int id);

    /// <summary>Waits until its cancellation token fires; records that it did.</summary>
    Task WaitForCancellation(CancellationToken cancellationToken = default);

    /// <summary>Never completes on its own: waits for the test to release it (or 30 s).</summary>
    Task<int> Hang(int id);

    /// <summary>Returns a payload of the given size.</summary>
    Task<byte[]> Bytes(int size);
}
