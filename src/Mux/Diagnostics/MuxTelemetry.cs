using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.IO.Pipelines;

namespace Mux.Diagnostics;

/// <summary>
/// Named after the OpenTelemetry RPC semantic conventions. Everything is checked for a listener first, so a process nobody
/// observes pays a flag test per call and allocates nothing.
/// </summary>

internal static class MuxTelemetry
{
    public const string Name = "Mux";

    public static readonly ActivitySource Source = new(Name, typeof(MuxTelemetry).Assembly.GetName().Version?.ToString());

    // Declared before every instrument below: static fields are initialized in order.
    public static readonly Meter Meter = new(Name);

    // The transport's counts, added once per flush or read, never per frame: frames per flush is mux.frames.sent
    // divided by mux.flushes.
    public static readonly Counter<long> FramesSent = Meter.CreateCounter<long>("mux.frames.sent", "{frame}", "Frames written to connections.");

    public static readonly Counter<long> Flushes = Meter.CreateCounter<long>(
        "mux.flushes", "{flush}", "Flushes of connection output; each carries every frame written before it.");

    public static readonly Counter<long> FramesReceived = Meter.CreateCounter<long>(
        "mux.frames.received", "{frame}", "Frames read from connections.");

    public static readonly Counter<long> Reads = Meter.CreateCounter<long>("mux.reads", "{read}", "Reads of connection input by the frame parser.");

    public static readonly Counter<long> ServerCallsOverloaded = Meter.CreateCounter<long>(
        "mux.server.calls.overloaded", "{call}",
        "Calls the server refused with status Overloaded, unrun, because it already ran MuxServerOptions.MaxConcurrentCalls calls at once.");

    // Call durations are sub-millisecond on a LAN; the default buckets (which start at 5 ms for
    // seconds) would put every call in the first one.
    private static readonly InstrumentAdvice<double> s_durationAdvice = new()
    {
        HistogramBucketBoundaries = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    };

    public static readonly Histogram<double> ClientCallDuration = Meter.CreateHistogram(
        "rpc.client.call.duration", "s", "Duration of calls made through MuxClient, from sending the request to completing the caller's task.",
        tags: null, s_durationAdvice);

    public static readonly Histogram<double> ServerCallDuration = Meter.CreateHistogram(
        "rpc.server.call.duration", "s", "Duration of calls served by MuxServer, from reading the request to queueing the response.",
        tags: null, s_durationAdvice);

    public static readonly Histogram<int> FramesPerFlush = Meter.CreateHistogram(
        "mux.flush.frames", "{frame}", "Frames carried by each flush of connection output (how well writes batch).", tags: null,
        new InstrumentAdvice<int> { HistogramBucketBoundaries = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] });

    public static readonly Counter<long> BytesSent = Meter.CreateCounter<long>(
        "mux.bytes.sent", "By", "Bytes flushed to connections (frames with their headers).");

    public static readonly Counter<long> BytesReceived = Meter.CreateCounter<long>(
        "mux.bytes.received", "By", "Bytes of complete frames read from connections.");

    /// <summary>Called by the writer role just before it flushes <paramref name="output"/>, whose unflushed bytes are this
    /// flush's.</summary>
    public static void OnFlush(int frames, PipeWriter output)
    {
        if (FramesPerFlush.Enabled)
        {
            FramesPerFlush.Record(frames);
        }

        if (BytesSent.Enabled && output.CanGetUnflushedBytes)
        {
            BytesSent.Add(output.UnflushedBytes);
        }
    }

    /// <summary>Records the bytes of the complete frames one read consumed: <paramref name="read"/> less
    /// <paramref name="unconsumed"/>, a partial frame.</summary>
    public static void OnRead(in ReadOnlySequence<byte> read, in ReadOnlySequence<byte> unconsumed)
    {
        if (BytesReceived.Enabled)
        {
            long bytes = read.Length - unconsumed.Length;
            if (bytes > 0)
            {
                BytesReceived.Add(bytes);
            }
        }
    }
}
