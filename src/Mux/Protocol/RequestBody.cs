using System.Diagnostics;
using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// The optional headers, each null when absent, then the arguments. A struct passed by generic type, so a call allocates
/// nothing for it.
/// </summary>
internal readonly struct RequestBody<TArguments>(
    TArguments arguments, uint? remainingMilliseconds, Activity? traceContext, byte[]? metadata) : IFrameBody
    where TArguments : struct, IFrameBody
{
    private readonly TArguments _arguments = arguments;
    private readonly uint? _remainingMilliseconds = remainingMilliseconds;
    private readonly Activity? _traceContext = traceContext;
    private readonly byte[]? _metadata = metadata;

    public
 FrameFlags Flags =>
        (_remainingMilliseconds.HasValue ? FrameFlags.Deadline : FrameFlags.None)
        | (_traceContext is null ? FrameFlags.None : FrameFlags.TraceContext)
        | (_metadata is null ? FrameFlags.None : FrameFlags.Metadata);

    public void Write(ref MessagePackWriter writer)
    {
        if (_remainingMilliseconds is uint remaining)
        {
            DeadlineHeader.Write(ref writer, remaining);
        }

        if (_traceContext is not null)
        {
            TraceContextHeader.Write(ref writer, _traceContext);
        }

        if (_metadata is not null)
        {
            writer.WriteRaw(_metadata);
        }

        TArguments arguments = _arguments;
        arguments.Write(ref writer);
    }
}
