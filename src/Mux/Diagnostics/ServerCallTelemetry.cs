using System.Buffers;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using Mux.Connection;
using Mux.Protocol;

namespace Mux.Diagnostics;

/// <summary>
/// The server span and duration measurement of one call, from reading the request to the end of
/// its handler, kept in the call itself (<see cref="IncomingCall"/>'s <c>Telemetry</c> field):
/// call objects are pooled per connection, so the state costs no allocation per call, and starting
/// or stopping it writes only the call's own memory. (It used to live in a process-wide
/// ConcurrentDictionary keyed by the call: with metrics on, 88 B and one shared write per call.)
/// <c>default</c> (all null/zero) when nobody listened as the call started.
/// </summary>
internal struct ServerCallTelemetry
{
    // The server span; null when nobody traces Mux or the sampler dropped this call.
    private Activity? _activity;

    // The call clock's timestamp of the read that brought the request (the reader takes one per
    // read, so a call costs no clock read of its own to start); 0 when nobody listens to
    // rpc.server.call.duration.
    private long _startTimestamp;

    // The method's names; set whenever the call is observed (see IsStarted).
    private MethodTelemetryName? _name;

    /// <summary>Whether <see cref="Start"/> observed the call and <see cref="Stop"/> has not yet
    /// ended it.</summary>
    public readonly bool IsStarted => _name is not null;

    /// <summary>Whether a call starting now should be observed: one read of each listener flag.</summary>
    public static bool IsObserved
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => MuxTelemetry.Source.HasListeners() || MuxTelemetry.ServerCallDuration.Enabled;
    }

    /// <summary>
    /// Starts the span as a child of the context the request carried (<paramref name="traceContext"/>,
    /// empty when it carried none). Runs on the reader loop, so that the span and the duration
    /// include the time the call waited for a thread. Call only when <see cref="IsObserved"/>.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Start(IncomingCall call, in ReadOnlySequence<byte> traceContext, long arrivedAt)
    {
        MethodTelemetryName name = MethodNames.Get(call.MethodId);
        Activity? activity = null;
        if (MuxTelemetry.Source.HasListeners())
        {
            // No caller context: a new trace, not a child of whatever flowed into the reader loop. The
            // reader loop is no place for the span either: the handler makes it current on its own thread.
            bool fromCaller = TraceContextHeader.TryParse(traceContext, out ActivityContext parent);
            activity = RpcTags.StartSpan(name, ActivityKind.Server, parent, newTrace: !fromCaller);
        }

        ref ServerCallTelemetry telemetry = ref call.Telemetry;
        telemetry._activity = activity;
        telemetry._startTimestamp = MuxTelemetry.ServerCallDuration.Enabled ? arrivedAt : 0;
        telemetry._name = name;
    }

    /// <summary>Makes the call's span current for its handler (so that the handler's own spans are
    /// its children). Returns what was current before, to restore when the handler returns.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Activity? EnterHandler(IncomingCall call)
    {
        Activity? previous = Activity.Current;
        if (call.Telemetry._activity is { } activity)
        {
            Activity.Current = activity;
        }

        return previous;
    }

    /// <summary>Ends the span and records the duration.</summary>
    /// <param name="call">The call, which <see cref="Start"/> observed (see <see cref="IsStarted"/>).</param>
    /// <param name="failure">What the handler threw; null when it succeeded.</param>
    /// <param name="code">How the call ended: Ok, or the status its Error frame carries.</param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Stop(IncomingCall call, Exception? failure, MuxStatusCode code)
    {
        ServerCallTelemetry telemetry = call.Telemetry;
        call.Telemetry = default; // Stopped once: the pooled call holds no span past its call.
        Debug.Assert(telemetry._name is not null, "Only a call Start observed is stopped, and only once.");
        string status = CallStatus.Of(code);
        string? errorType = failure?.GetType().FullName;

        RpcTags.EndSpan(telemetry._activity, status, errorType, failure);
        if (telemetry._startTimestamp != 0)
        {
            MuxTelemetry.ServerCallDuration.Record(call.TimeProvider.GetElapsedTime(telemetry._startTimestamp).TotalSeconds, RpcTags.DurationTags(telemetry._name, status, errorType));
        }
    }
}
