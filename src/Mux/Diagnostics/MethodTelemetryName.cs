namespace Mux.Diagnostics;

/// <summary>
/// What traces, metrics and logs call one method. Built once per method id (see
/// <see cref="MethodNames"/>), so naming a call costs a dictionary lookup, never a string.
/// </summary>
internal sealed class MethodTelemetryName(string service, string method)
{
    /// <summary>The contract's full name, for example <c>Mux.Samples.Load.IUserService</c> (rpc.service).</summary>
    public string Service { get; } = service;

    /// <summary>The method's name, for example <c>Add</c> (rpc.method).</summary>
    public string Method { get; } = method;

    /// <summary><c>{rpc.service}/{rpc.method}</c>: the span name the OpenTelemetry RPC conventions ask for.</summary>
    public string SpanName { get; } = service + "/" + method;

    /// <summary><c>IService.Method</c>: how logs name the method.</summary>
    public string DisplayName { get; } = MuxServiceRegistry.ShortServiceName(service) + "." + method;
}
