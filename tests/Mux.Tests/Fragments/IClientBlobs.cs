namespace Mux.Tests.Fragments;

/// <summary>What the fragment tests' clients serve to their server: large byte arrays both ways.</summary>
[MuxService]
public interface IClientBlobs
{
    /// <summary>Returns <paramref name="data"/> as it arrived.</summary>
    Task<byte[]> Echo(byte[] data);

    /// <summary>Returns <see cref="BlobService.Pattern"/> of <paramref name="size"/> bytes.</summary>
    Task<byte[]> Make(int size);
}
