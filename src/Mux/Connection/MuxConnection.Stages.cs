using Mux.Diagnostics;

namespace Mux.Connection;

// The serial stages' own clock (Diagnostics/StageClock.cs): the reader loop and the writer role
// add to it through the hooks marked "stage clock" in MuxConnection.Read.cs and
// MuxConnection.Write.cs; the load runner reads it to report each stage's µs per call.
internal abstract partial class MuxConnection
{
    // Written by the reader loop (its half) and the writer role holder (its half) only; read racily
    // by GetStageTimes. Not readonly: the hooks add to it in place.
    private StageClock _stages;

    /// <summary>The time the reader loop and the writer role have spent working since the
    /// connection opened (see <see cref="StageClock"/>). Safe to call from any thread.</summary>
    internal StageTimes GetStageTimes() => _stages.Read(TimeProvider.TimestampFrequency);
}
