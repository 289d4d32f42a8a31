namespace Mux.LoadRunner;

/// <summary>The soak's calls that the bench services lack: an upload, a client stream and a handler
/// slower than the deadlines and cancellations aimed at it.</summary>
[MuxService]
public interface ISoakService
{
    /// <summary>Returns the length of what arrived.</summary>
    Task<int> Upload(byte[] data);

    /// <summary>Returns the sum of the streamed values.</summary>
    Task<long> Sum(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default);

    /// <summary>Waits <paramref name="milliseconds"/> (ending early when the call is cancelled or its
    /// deadline passes) and returns the same number.</summary>
    Task<int> Sleep(int milliseconds, CancellationToken cancellationToken = default);
}

/// <summary>Serves <see cref="ISoakService"/> in every Mux server process the runner starts.</summary>
internal sealed class SoakService : ISoakService
{
    public Task<int> Upload(byte[] data) => Task.FromResult(data.Length);

    public async Task<long> Sum(IAsyncEnumerable<int> values, CancellationToken cancellationToken = default)
    {
        long sum = 0;
        await foreach (int value in values.WithCancellation(cancellationToken))
        {
            sum += value;
        }

        return sum;
    }

    public async Task<int> Sleep(int milliseconds, CancellationToken cancellationToken = default)
    {
        // Honours the token so that a cancelled or expired call frees its server slot at once.
        await Task.Delay(milliseconds, cancellationToken);
        return milliseconds;
    }
}
