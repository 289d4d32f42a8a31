using System.Diagnostics;

namespace Mux.Diagnostics;

/// <summary>Attribute names and values of the OpenTelemetry RPC semantic conventions that Mux sets, and the tagging both
/// sides' calls share.</summary>
internal static class RpcTags
{
    public const string System = "rpc.system";
    public const string SystemValue = "mux";
    public const string Service = "rpc.service";
    public const string Method = "rpc.method";
    public const string StatusCode = "rpc.response.status_code";
    public const string ErrorType = "error.type";
    public const string ServerAddress = "server.address";
    public const string ServerPort = "server.port";

    /// <summary>Starts a call's span, tagged with its method when it records data; null when the sampler drops it. With a
    /// default <paramref name="parent"/> it is a child of the current activity, unless <paramref name="newTrace"/>. What was
    /// current stays current: the thread that starts a span goes on with its own work. Call only when the source has
    /// listeners.</summary>
    public static Activity? StartSpan(MethodTelemetryName name, ActivityKind kind, in ActivityContext parent, bool newTrace)
    {
        Activity? previous = Activity.Current;
        if (newTrace)
        {
            Activity.Current = null;
        }

        Activity? activity = MuxTelemetry.Source.StartActivity(name.SpanName, kind, parent);
        Activity.Current = previous;
        if (activity is { IsAllDataRequested: true })
        {
            activity.SetTag(System, SystemValue);
            activity.SetTag(Service, name.Service);
            activity.SetTag(Method, name.Method);
        }

        return activity;
    }

    /// <summary>Ends a call's span, if it has one, with its <see cref="CallStatus"/>; <paramref name="errorType"/> and
    /// <paramref name="error"/>, whose message becomes the span's, are null when the call succeeded.</summary>
    public static void EndSpan(Activity? activity, string status, string? errorType, Exception? error)
    {
        if (activity is null)
        {
            return;
        }

        activity.SetTag(StatusCode, status);
        if (errorType is not null)
        {
            activity.SetTag(ErrorType, errorType);
            activity.SetStatus(ActivityStatusCode.Error, error!.Message);
        }

        activity.Stop();
    }

    /// <summary>The tags of a call's duration: at most five, and TagList keeps up to eight inline, so this allocates
    /// nothing.</summary>
    public static TagList DurationTags(MethodTelemetryName name, string status, string? errorType)
    {
        var tags = new TagList
        {
            { System, SystemValue },
            { Service, name.Service },
            { Method, name.Method },
            { StatusCode, status },
        };
        if (errorType is not null)
        {
            tags.Add(ErrorType, errorType);
        }

        return tags;
    }
}
