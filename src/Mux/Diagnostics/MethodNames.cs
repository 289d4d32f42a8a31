using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Diagnostics;

/// <summary>
/// By wire id, so the client, which sends only ids, can name calls. Filled from generated module initializers through
/// <see cref="MuxServiceDefinition{TService}.AddMethod"/>.
/// </summary>

internal static class MethodNames
{
    // Written as definitions are built at start-up, read per call while telemetry is on. Ids hash full names; the first name wins.
    private static readonly ConcurrentDictionary<uint, MethodTelemetryName> s_byId = new();

    public static void Register(uint methodId, string service, string method) =>
        s_byId.TryAdd(methodId, new MethodTelemetryName(service, method));

    /// <summary>The names of a method some definition declared.</summary>
    public static bool TryGet(uint methodId, [NotNullWhen(true)] out MethodTelemetryName? name) => s_byId.TryGetValue(methodId, out name);

    /// <summary>The method's names; a method no definition declared (a raw <see cref="MuxClient.InvokeAsync{TArguments}"/>
    /// call) is named by its hex id.</summary>
    public static MethodTelemetryName Get(uint methodId) =>
        s_byId.TryGetValue(methodId, out MethodTelemetryName? name)
            ? name
            : s_byId.GetOrAdd(methodId, static id => new MethodTelemetryName("unknown", $"0x{id:x8}"));
}

/// <summary>What traces, metrics and logs call one method, built once per method id, so naming a call costs a lookup,
/// never a string.</summary>
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
