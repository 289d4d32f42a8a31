namespace Mux.LoadRunner;

/// <summary>The service of the large-payload measurement (--big-payload-mib): a small call and an upload.</summary>
[MuxService]
public interface IBigPayloadService
{
    ValueTask<int> Add(int a, int b);

    /// <summary>Returns the length of what arrived.</summary>
    Task<int> Upload(byte[] data);

    /// <summary>Returns the server's payload of the measurement (--big-download).</summary>
    Task<byte[]> Download();
}
