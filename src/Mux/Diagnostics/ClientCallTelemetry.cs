using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Mux.Diagnostics;

/// <summary>
/// The client span and duration measurement of one call, carried by its pending call from sending
/// the request to completing the caller's task. <c>default</c> (all null/zero) when nobody listens,
/// which is what <see cref="Start"/> returns after two flag tests.
/// </summary>
internal struct ClientCallTelemetry
{
    // The client span; null when nobody traces Mux or the sampler dropped this call.
    private Activity? _activity;

    // The connection's clock, and its timestamp at the start; 0 when nobody listens to
    // rpc.client.call.duration.
    private TimeProvider? _clock;
    private long _startTimestamp;

    // The method's names; set whenever either of the above is.
    private MethodTelemetryName? _name;

    // The instance the call went to, for the duration's server.address/server.port (a client over
    // several instances reports each one's calls apart); null when nobody listens.
    private ServerPeer? _peer;

    /// <summary>The client span, whose context the request carries to the server.</summary>
    public readonly Activity? Activity => _activity;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static ClientCallTelemetry Start(uint methodId, ServerPeer? peer, TimeProvider clock, long now)
    {
        if (!MuxTelemetry.Source.HasListeners() && !MuxTelemetry.ClientCallDuration.Enabled)
        {
            return default;
        }

        return StartObserved(methodId, peer, clock, now);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static ClientCallTelemetry StartObserved(uint methodId, ServerPeer? peer, TimeProvider clock, long now)
    {
        MethodTelemetryName name = MethodNames.Get(methodId);
        // A child of the caller's activity, which stays current: this method returns synchronously
        // into the caller's context, where the span would make every later operation of the caller
        // look like a child of this call.
        Activity? activity = MuxTelemetry.Source.HasListeners() ? RpcTags.StartSpan(name, ActivityKind.Client, default, newTrace: false) : null;
        if (peer is not null && activity is { IsAllDataRequested: true })
        {
            activity.SetTag(RpcTags.ServerAddress, peer.Address);
            activity.SetTag(RpcTags.ServerPort, peer.Port);
        }

        return new ClientCallTelemetry
        {
            _activity = activity,
            _clock = clock,
            // The timestamp the call's deadline was fixed with, read moments ago; 0 for a call
            // without a deadline, which reads its own.
            _startTimestamp = MuxTelemetry.ClientCallDuration.Enabled ? (now != 0 ? now : clock.GetTimestamp()) : 0,
            _name = name,
            _peer = peer,
        };
    }

    /// <summary>Ends the span and records the duration. <paramref name="error"/> is null for a
    /// successful call.</summary>
    public readonly void Stop(Exception? error)
    {
        if (_name is null)
        {
            return;
        }

        StopObserved(error is null ? CallStatus.Ok : CallStatus.OfClientFailure(error), error);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private readonly void StopObserved(string status, Exception? error)
    {
        string? errorType = error switch
        {
            null => null,
            MuxRemoteException => status,
            _ => error.GetType().FullName,
        };

        RpcTags.EndSpan(_activity, status, errorType, error);
        if (_startTimestamp != 0)
        {
            // Seven tags at most with the peer's: still inline in the TagList.
            TagList tags = RpcTags.DurationTags(_name!, status, errorType);
            if (_peer is not null)
            {
                tags.Add(RpcTags.ServerAddress, _peer.Address);
                tags.Add(RpcTags.ServerPort, _peer.Port);
            }

            MuxTelemetry.ClientCallDuration.Record(_clock!.GetElapsedTime(_startTimestamp).TotalSeconds, tags);
        }
    }
}
