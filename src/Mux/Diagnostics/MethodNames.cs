using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;

namespace Mux.Diagnostics;

/// <summary>
/// The names of every method Mux knows, by wire id, so that telemetry and messages on the client
/// (which sends only ids) can name calls. Filled by <see cref="MuxServiceDefinition{TService}.AddMethod"/>, which
/// generated code runs from a module initializer for every <see cref="MuxServiceAttribute"/>
/// interface, so both proxies and servers find their methods here.
/// </summary>
internal static class MethodNames
{
    // Written when definitions are built (start-up), read per call while telemetry is on. Ids are
    // hashes of full names, so two services cannot share one in practice; the first name wins.
    private static readonly ConcurrentDictionary<uint, MethodTelemetryName> s_byId = new();

    public static void Register(uint methodId, string service, string method) =>
        s_byId.TryAdd(methodId, new MethodTelemetryName(service, method));

    /// <summary>The names of a method some definition declared.</summary>
    public static bool TryGet(uint methodId, [NotNullWhen(true)] out MethodTelemetryName? name) => s_byId.TryGetValue(methodId, out name);

    /// <summary>The method's names; a method no definition declared (a raw
    /// <see cref="MuxClient.InvokeAsync{TArguments}"/> call) is named by its hex id.</summary>
    public static MethodTelemetryName Get(uint methodId) =>
        s_byId.TryGetValue(methodId, out MethodTelemetryName? name) ? name : s_byId.GetOrAdd(methodId, static id => new MethodTelemetryName("unknown", $"0x{id:x8}"));
}
