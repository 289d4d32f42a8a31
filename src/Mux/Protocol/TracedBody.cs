using System.Diagnostics;
using MessagePack;

namespace Mux.Protocol;

/// <summary>A Request body preceded by the trace-context header: written when the frame carries
/// <see cref="FrameFlags.TraceContext"/>. A struct passed by generic type, like the body it wraps.</summary>
internal readonly struct TracedBody<TBody>(TBody body, Activity context) : IFrameBody
    where TBody : struct, IFrameBody
{
    private readonly TBody _body = body;
    private readonly Activity _context = context;

    public void Write(ref MessagePackWriter writer)
    {
        TraceContextHeader.Write(ref writer, _context);
        TBody body = _body;
        body.Write(ref writer);
    }
}
