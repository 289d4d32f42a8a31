using System.Diagnostics;

namespace Mux.Samples.Telemetry;

/// <summary>The sample application's own activity source: its "checkout" span is the root of the trace.</summary>
internal static class Checkout
{
    public const string SourceName = "Mux.Samples.Telemetry";

    public static readonly ActivitySource Source = new(SourceName);
}
