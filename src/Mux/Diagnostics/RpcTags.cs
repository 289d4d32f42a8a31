namespace Mux.Diagnostics;

/// <summary>Attribute names and values of the OpenTelemetry RPC semantic conventions that Mux sets.</summary>
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
}
