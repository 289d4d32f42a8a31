namespace Mux.Diagnostics;

/// <summary>
/// Values of the <c>rpc.response.status_code</c> tag: the <see cref="MuxStatusCode"/> names, plus the ways a call can end
/// on the client without one. Constants, so tagging a call allocates nothing.
/// </summary>

internal static class CallStatus
{
    public const string Ok = nameof(MuxStatusCode.Ok);

    /// <summary>The caller's token fired (client), or the handler observed cancellation (server).</summary>
    public const string Canceled = nameof(MuxStatusCode.Canceled);

    /// <summary>MuxClientOptions.CallTimeout expired before the response came.</summary>
    public const string Timeout = "Timeout";

    /// <summary>The connection closed (or the server sent GoAway) before the response came.</summary>
    public const string ConnectionClosed = "ConnectionClosed";

    /// <summary>The call failed on the client: an argument or the result could not be serialized, or the request was too
    /// large to send.</summary>
    public const string ClientError = "ClientError";

    /// <summary>The enum's own name, which the runtime keeps per value, so it allocates nothing; a code this build does not
    /// know is "Unknown".</summary>
    public static string Of(MuxStatusCode code) => Enum.GetName(code) ?? "Unknown";

    /// <summary>How a call that failed on the client with <paramref name="error"/> ended.</summary>
    public static string OfClientFailure(Exception error) => error switch
    {
        MuxRemoteException remote => Of(remote.StatusCode),
        OperationCanceledException => Canceled,
        TimeoutException => Timeout,
        MuxConnectionException => ConnectionClosed,
        _ => ClientError,
    };
}
