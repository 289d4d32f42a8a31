using System.Diagnostics;

namespace Mux.Diagnostics;

/// <summary>Attribute names and values of the OpenTelemetry RPC semantic conventions that Mux sets,
/// and the tagging both sides' calls share.</summary>
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

    /// <summary>Tags a call's span (one that records data) with its method.</summary>
    public static void SetMethod(Activity activity, MethodTelemetryName name)
    {
        activity.SetTag(System, SystemValue);
        activity.SetTag(Service, name.Service);
        activity.SetTag(Method, name.Method);
    }

    /// <summary>Ends a call's span, if it has one, with how the call ended.</summary>
    /// <param name="activity">The span; null when nobody traced the call.</param>
    /// <param name="status">The call's <see cref="CallStatus"/>.</param>
    /// <param name="errorType">The error.type tag; null when the call succeeded.</param>
    /// <param name="error">What the call failed with (its message is the span's); null when it succeeded.</param>
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

    /// <summary>The tags of a call's duration: at most five, and TagList keeps up to eight inline,
    /// so this allocates nothing.</summary>
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
