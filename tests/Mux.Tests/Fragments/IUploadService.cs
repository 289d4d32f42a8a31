namespace Mux.Tests.Fragments;

/// <summary>The contract of the tests that stop a large request in the middle of its transfer
/// (<see cref="UploadService"/>).</summary>
[MuxService]
public interface IUploadService
{
    /// <summary>Counts the call and returns the length of <paramref name="data"/>.</summary>
    Task<int> Upload(byte[] data, CancellationToken cancellationToken = default);

    /// <summary>Waits until the test releases every held call, then returns <paramref name="value"/>;
    /// ends with its token.</summary>
    Task<int> Hold(int value, CancellationToken cancellationToken = default);

    ValueTask<int> Add(int a, int b);
}
