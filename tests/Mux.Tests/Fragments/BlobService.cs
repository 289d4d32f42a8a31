namespace Mux.Tests.Fragments;

/// <summary>Serves <see cref="IBlobService"/> and counts the calls it ran.</summary>
public sealed class BlobService : IBlobService
{
    private int _adds;
    private int _echoes;

    /// <summary>How many Add calls ran.</summary>
    public int Adds => Volatile.Read(ref _adds);

    /// <summary>How many Echo calls ran.</summary>
    public int Echoes => Volatile.Read(ref _echoes);

    /// <summary>Bytes that differ from their neighbours and repeat only every 251 bytes (a prime),
    /// so a fragment written twice, dropped or out of order shows.</summary>
    public static byte[] Pattern(int size)
    {
        var bytes = new byte[size];
        for (int i = 0; i < bytes.Length; i++)
        {
            bytes[i] = (byte)((i % 251) ^ (i >> 16));
        }

        return bytes;
    }

    public Task<byte[]> Echo(byte[] data)
    {
        Interlocked.Increment(ref _echoes);
        return Task.FromResult(data);
    }

    public Task<byte[]> Make(int size) => Task.FromResult(Pattern(size));

    public ValueTask<int> Add(int a, int b)
    {
        Interlocked.Increment(ref _adds);
        return ValueTask.FromResult(a + b);
    }
}
