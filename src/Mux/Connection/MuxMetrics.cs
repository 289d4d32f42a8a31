using System.Diagnostics.Metrics;

namespace Mux.Connection;

/// <summary>
/// Mux's instruments on the "Mux" meter (read them with dotnet-counters or OpenTelemetry).
/// Updated once per flush or read, not per frame, so they cost nothing measurable on the hot path;
/// frames per flush is mux.frames.sent divided by mux.flushes.
/// </summary>
internal static class MuxMetrics
{
    public static readonly Meter Meter = new("Mux");

    public static readonly Counter<long> FramesSent = Meter.CreateCounter<long>("mux.frames.sent", "{frame}", "Frames written to connections.");

    public static readonly Counter<long> Flushes = Meter.CreateCounter<long>("mux.flushes", "{flush}", "Flushes of connection output; each carries every frame written before it.");

    public static readonly Counter<long> FramesReceived = Meter.CreateCounter<long>("mux.frames.received", "{frame}", "Frames read from connections.");

    public static readonly Counter<long> Reads = Meter.CreateCounter<long>("mux.reads", "{read}", "Reads of connection input by the frame parser.");
}
