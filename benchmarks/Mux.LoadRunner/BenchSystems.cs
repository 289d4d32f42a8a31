namespace Mux.LoadRunner;

/// <summary>The systems --systems accepts, and why some cannot run here.</summary>
internal static class BenchSystems
{
    public const string Mux = "mux";

    /// <summary>Mux over TLS (self-signed certificate made by the server process; the benchmark's client
    /// skips trust checks). Only on request (--systems mux,mux-tls), not in the default sweep.</summary>
    public const string MuxTls = "mux-tls";
    public const string RawSingle = "raw-single";
    public const string RawBatched = "raw-batched";

    /// <summary>grpc-dotnet over one HTTP/2 connection (Kestrel's stream limit raised).</summary>
    public const string Grpc = "grpc";

    /// <summary>grpc-dotnet with its defaults: the channel opens more connections past 100 streams.</summary>
    public const string GrpcDefault = "grpc-default";

    /// <summary>StreamJsonRpc, MessagePack formatter, length-header framing, one socket.</summary>
    public const string StreamJsonRpc = "streamjsonrpc";

    /// <summary>SignalR, MessagePack hub protocol, one WebSocket.</summary>
    public const string SignalR = "signalr";

    /// <summary>Mux over one WebSocket to a Kestrel server (Mux.AspNetCore's MapMux), next to SignalR's.</summary>
    public const string MuxWebSocket = "mux-ws";

    /// <summary>Implemented, in the order the default sweep runs them.</summary>
    public static readonly string[] Runnable = [Mux, RawSingle, RawBatched, Grpc, GrpcDefault, StreamJsonRpc, SignalR, MuxWebSocket, MuxTls];

    /// <summary>
    /// Accepted by --systems but not built: their NuGet packages are missing from the package source
    /// this repository builds from. The reasons quote the errors of `dotnet add package` in a scratch
    /// net10.0 project against that source.
    /// </summary>
    public static readonly IReadOnlyDictionary<string, string> Unavailable = new Dictionary<string, string>
    {
        ["xrpc"] =
            "the package cannot be restored from the configured NuGet source. " +
            "dotnet add package BeetleX.XRPC: \"error: There are no versions available for the package 'BeetleX.XRPC'.\"",
    };

    public static IEnumerable<string> All => Runnable.Where(s => s != MuxTls).Concat(Unavailable.Keys);

    public static bool IsKnown(string system) => Runnable.Contains(system) || Unavailable.ContainsKey(system);

    public static bool IsRaw(string system) => system is RawSingle or RawBatched;
}
