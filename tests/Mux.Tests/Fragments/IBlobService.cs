namespace Mux.Tests.Fragments;

/// <summary>The contract of the fragment tests: large byte arrays both ways, and a small call.</summary>
[MuxService]
public interface IBlobService
{
    /// <summary>Returns <paramref name="data"/> as it arrived.</summary>
    Task<byte[]> Echo(byte[] data);

    /// <summary>Returns <see cref="BlobService.Pattern"/> of <paramref name="size"/> bytes.</summary>
    Task<byte[]> Make(int size);

    ValueTask<int> Add(int a, int b);
}
