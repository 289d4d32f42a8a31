namespace Mux.Protocol;

/// <summary>Per-frame flag bits. Version 1 defines none; the byte is kept so that chunking
/// ("more fragments follow") can be added without changing the frame layout.</summary>
[Flags]
internal enum FrameFlags : byte
{
    None = 0,

    /// <summary>Reserved for chunked payloads: more fragments of this call follow. Rejected in version 1.</summary>
    MoreFragments = 1,
}
