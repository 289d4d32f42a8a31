using System.Buffers;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using Mux.Connection;

namespace Mux.Diagnostics;

/// <summary>
/// The server span and duration measurement of one call, carried by its <see cref="MuxServerCall"/>
/// from reading the request to queueing the response. <c>default</c> when nobody listens.
/// </summary>
internal struct ServerCallTelemetry
{
    // The server span; null when nobody traces Mux or the sampler dropped this call.
    private Activity? _activity;

    // Stopwatch timestamp at the start; 0 when nobody listens to rpc.server.call.duration.
    private long _startTimestamp;

    // The method's names; set whenever either of the above is.
    private MethodTelemetryName? _name;

    /// <summary>
    /// Starts the span as a child of the context the request carried (<paramref name="traceContext"/>,
    /// empty when it carried none). Runs on the reader loop, so that the span and the duration
    /// include the time the call waited for a thread.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static ServerCallTelemetry Start(uint methodId, in ReadOnlySequence<byte> traceContext)
    {
        if (!MuxTelemetry.Source.HasListeners() && !MuxTelemetry.ServerCallDuration.Enabled)
        {
            return default;
        }

        return StartObserved(methodId, traceContext);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static ServerCallTelemetry StartObserved(uint methodId, in ReadOnlySequence<byte> traceContext)
    {
        MethodTelemetryName name = MethodNames.Get(methodId);
        Activity? activity = null;
        if (MuxTelemetry.Source.HasListeners())
        {
            Activity? previous = Activity.Current;
            if (!TraceContextHeader.TryParse(traceContext, out ActivityContext parent))
            {
                // No caller context: a new trace, not a child of whatever flowed into the reader loop.
                Activity.Current = null;
            }

            activity = MuxTelemetry.Source.StartActivity(name.SpanName, ActivityKind.Server, parent);
            // The reader loop is no place for the span: the handler makes it current on its own thread.
            Activity.Current = previous;
            if (activity is not null)
            {
                if (activity.IsAllDataRequested)
                {
                    activity.SetTag(RpcTags.System, RpcTags.SystemValue);
                    activity.SetTag(RpcTags.Service, name.Service);
                    activity.SetTag(RpcTags.Method, name.Method);
                }
            }
        }

        return new ServerCallTelemetry
        {
            _activity = activity,
            _startTimestamp = MuxTelemetry.ServerCallDuration.Enabled ? Stopwatch.GetTimestamp() : 0,
            _name = name,
        };
    }

    /// <summary>Makes the span current for the handler (so the handler's own spans are its
    /// children) and returns what was current before, to restore when the handler returns.</summary>
    public readonly Activity? EnterHandler()
    {
        if (_activity is null)
        {
            return null;
        }

        Activity? previous = Activity.Current;
        Activity.Current = _activity;
        return previous;
    }

    /// <summary>Ends the span and records the duration.</summary>
    /// <param name="failure">What the handler threw; null when it succeeded.</param>
    /// <param name="cancellationRequested">Whether the call had been cancelled (so that an
    /// OperationCanceledException counts as Canceled, as the Error frame reports it).</param>
    public readonly void Stop(Exception? failure, bool cancellationRequested)
    {
        if (_name is null)
        {
            return;
        }

        StopObserved(failure, cancellationRequested);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private readonly void StopObserved(Exception? failure, bool cancellationRequested)
    {
        string status = failure switch
        {
            null => CallStatus.Ok,
            InvalidArgumentsException => CallStatus.Of(MuxStatusCode.InvalidArguments),
            FrameTooLargeException => CallStatus.Of(MuxStatusCode.FrameTooLarge),
            OperationCanceledException when cancellationRequested => CallStatus.Canceled,
            _ => CallStatus.Of(MuxStatusCode.HandlerFailed),
        };
        string? errorType = failure?.GetType().FullName;

        if (_activity is not null)
        {
            _activity.SetTag(RpcTags.StatusCode, status);
            if (errorType is not null)
            {
                _activity.SetTag(RpcTags.ErrorType, errorType);
                _activity.SetStatus(ActivityStatusCode.Error, failure!.Message);
            }

            _activity.Stop();
        }

        if (_startTimestamp != 0)
        {
            var tags = new TagList
            {
                { RpcTags.System, RpcTags.SystemValue },
                { RpcTags.Service, _name!.Service },
                { RpcTags.Method, _name.Method },
                { RpcTags.StatusCode, status },
            };
            if (errorType is not null)
            {
                tags.Add(RpcTags.ErrorType, errorType);
            }

            MuxTelemetry.ServerCallDuration.Record(Stopwatch.GetElapsedTime(_startTimestamp).TotalSeconds, tags);
        }
    }
}
