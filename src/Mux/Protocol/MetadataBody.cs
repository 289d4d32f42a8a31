using MessagePack;

namespace Mux.Protocol;

/// <summary>A Request body that starts with the call's metadata section: written when the frame
/// carries <see cref="FrameFlags.Metadata"/>. Wraps the arguments, and is itself wrapped by the
/// deadline and trace-context headers, so the parts come in the order docs/protocol.md gives. A
/// struct passed by generic type, like the body it wraps.</summary>
internal readonly struct MetadataBody<TBody>(TBody body, byte[] section) : IFrameBody
    where TBody : struct, IFrameBody
{
    private readonly TBody _body = body;

    // The encoded section (MetadataSection.Encode), shared by every call made with the same options.
    private readonly byte[] _section = section;

    public void Write(ref MessagePackWriter writer)
    {
        writer.WriteRaw(_section);
        TBody body = _body;
        body.Write(ref writer);
    }
}
