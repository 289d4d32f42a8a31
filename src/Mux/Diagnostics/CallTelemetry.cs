using System.Buffers;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;
using Mux.Protocol;

namespace Mux.Diagnostics;

/// <summary>
/// It lives in the pooled call object, so observing a call allocates nothing and writes only the call's own memory.
/// <c>default</c> when nobody listened as the call started.
/// </summary>
internal struct CallTelemetry
{
    // The span; null when nobody traces Mux or the sampler dropped this call.
    private Activity? _activity;

    // The side's duration histogram, the connection's clock and the start timestamp; null/0 when nobody listens to it.
    private Histogram<double>? _duration;
    private TimeProvider? _clock;
    private long _startTimestamp;

    // The method's names; set whenever the call is observed (see IsStarted).
    private MethodTelemetryName? _name;

    // A client's: the instance the call went to, so a client over several reports each one's calls apart; null on a server.
    private ServerPeer? _peer;

    /// <summary>The span; a client's is the context its request carries to the server.</summary>
    public readonly Activity? Activity => _activity;

    public
 readonly bool IsStarted => _name is not null;

    /// <summary>Whether a call starting now on the side of <paramref name="duration"/> is observed: one read of each
    /// listener flag.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool IsObserved(Histogram<double> duration) => MuxTelemetry.Source.HasListeners() || duration.Enabled;

    /// <summary>A client call's, <c>default</c> when nobody listens.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static CallTelemetry StartClient(uint methodId, ServerPeer? peer, TimeProvider clock, long now) =>
        IsObserved(MuxTelemetry.ClientCallDuration) ? StartClientObserved(methodId, peer, clock, now) : default;

    // A child of the caller's activity, which stays current: this returns synchronously into the caller's context, where
    // the span would make every later operation of the caller its child. now is the deadline's timestamp; 0 reads the clock.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static CallTelemetry StartClientObserved(uint methodId, ServerPeer? peer, TimeProvider clock, long now) =>
        Start(methodId, ActivityKind.Client, default, newTrace: false, MuxTelemetry.ClientCallDuration, clock, now, peer);

    /// <summary>
    /// A server call's, its span a child of the context the request carried. Runs on the reader loop, so the span and the
    /// duration include the wait for a thread; <paramref name="arrivedAt"/> is the read's timestamp, so a call reads no
    /// clock of its own. Call only when <see cref="IsObserved"/>.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static CallTelemetry StartServer(uint methodId, in ReadOnlySequence<byte> traceContext, TimeProvider clock, long arrivedAt)
    {
        // No caller context: a new trace, not a child of whatever flowed into the reader loop. The
        // reader loop is no place for the span either: the handler makes it current on its own thread.
        ActivityContext parent = default;
        bool fromCaller = MuxTelemetry.Source.HasListeners() && TraceContextHeader.TryParse(traceContext, out parent);
        return Start(methodId, ActivityKind.Server, parent, newTrace: !fromCaller, MuxTelemetry.ServerCallDuration, clock, arrivedAt, peer: null);
    }

    // Inlined into each side's entry, so that sharing it costs a listened-to call no extra call.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static CallTelemetry Start(
        uint methodId, ActivityKind kind, in ActivityContext parent, bool newTrace, Histogram<double> duration, TimeProvider clock, long now,
        ServerPeer? peer)
    {
        MethodTelemetryName name = MethodNames.Get(methodId);
        Activity? activity = MuxTelemetry.Source.HasListeners() ? RpcTags.StartSpan(name, kind, parent, newTrace) : null;
        if (peer is not null && activity is { IsAllDataRequested: true })
        {
            activity.SetTag(RpcTags.ServerAddress, peer.Address);
            activity.SetTag(RpcTags.ServerPort, peer.Port);
        }

        bool measured = duration.Enabled;
        return new CallTelemetry
        {
            _activity = activity,
            _duration = measured ? duration : null,
            _clock = clock,
            _startTimestamp = !measured ? 0 : now != 0 ? now : clock.GetTimestamp(),
            _name = name,
            _peer = peer,
        };
    }

    /// <summary>Makes a server call's span current for its handler, so the handler's own spans are its children. Returns
    /// what was current before, to restore when the handler returns.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public readonly Activity? EnterHandler()
    {
        Activity? previous = Activity.Current;
        if (_activity is not null)
        {
            Activity.Current = _activity;
        }

        return previous;
    }

    /// <summary>Ends a client call's span and records its duration, if it is observed; <paramref name="error"/> is null
    /// for a successful call.</summary>
    public readonly void Stop(Exception? error)
    {
        if (_name is null)
        {
            return;
        }

        StopClientObserved(error is null ? CallStatus.Ok : CallStatus.OfClientFailure(error), error);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private readonly void StopClientObserved(string status, Exception? error)
    {
        string? errorType = error switch
        {
            null => null,
            MuxRemoteException => status,
            _ => error.GetType().FullName,
        };

        Stop(status, errorType, error);
    }

    /// <summary>Ends a server call's span and records its duration, with what the handler threw (<paramref name="failure"/>)
    /// and the status its Error frame carries, or Ok. Call only when <see cref="IsStarted"/>.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public readonly void Stop(Exception? failure, MuxStatusCode code) =>
        Stop(CallStatus.Of(code), failure?.GetType().FullName, failure);

    // Inlined into each side's entry, so that sharing it costs a listened-to call no extra call.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private readonly void Stop(string status, string? errorType, Exception? error)
    {
        RpcTags.EndSpan(_activity, status, errorType, error);
        if (_duration is not null)
        {
            // Seven tags at most with a client's peer: still inline in the TagList.
            TagList tags = RpcTags.DurationTags(_name!, status, errorType);
            if (_peer is not null)
            {
                tags.Add(RpcTags.ServerAddress, _peer.Address);
                tags.Add(RpcTags.ServerPort, _peer.Port);
            }

            _duration.Record(_clock!.GetElapsedTime(_startTimestamp).TotalSeconds, tags);
        }
    }
}
