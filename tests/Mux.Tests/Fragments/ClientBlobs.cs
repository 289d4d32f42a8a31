namespace Mux.Tests.Fragments;

/// <summary>A client's <see cref="IClientBlobs"/>, counting the calls it ran.</summary>
public sealed class ClientBlobs : IClientBlobs
{
    private int _echoes;
    private int _makes;

    /// <summary>How many Echo calls ran.</summary>
    public int Echoes => Volatile.Read(ref _echoes);

    /// <summary>How many Make calls ran.</summary>
    public int Makes => Volatile.Read(ref _makes);

    public Task<byte[]> Echo(byte[] data)
    {
        Interlocked.Increment(ref _echoes);
        return Task.FromResult(data);
    }

    public Task<byte[]> Make(int size)
    {
        Interlocked.Increment(ref _makes);
        return Task.FromResult(BlobService.Pattern(size));
    }
}
