using MessagePack;

namespace Mux.Protocol;

/// <summary>A Request body preceded by the deadline header: written when the frame carries
/// <see cref="FrameFlags.Deadline"/>. Wraps the arguments, or the trace-context header and the
/// arguments, so the headers come in the order docs/protocol.md gives. A struct passed by generic
/// type, like the body it wraps, so a call allocates nothing for it.</summary>
internal readonly struct DeadlineBody<TBody>(TBody body, uint remainingMilliseconds) : IFrameBody
    where TBody : struct, IFrameBody
{
    private readonly TBody _body = body;
    private readonly uint _remainingMilliseconds = remainingMilliseconds;

    public void Write(ref MessagePackWriter writer)
    {
        DeadlineHeader.Write(ref writer, _remainingMilliseconds);
        TBody body = _body;
        body.Write(ref writer);
    }
}
