namespace Mux.LoadRunner;

/// <summary>The systems --systems accepts, and why some cannot run here.</summary>
internal static class BenchSystems
{
    public const string Mux = "mux";
    public const string RawSingle = "raw-single";
    public const string RawBatched = "raw-batched";

    /// <summary>Implemented, in the order the default sweep runs them.</summary>
    public static readonly string[] Runnable = [Mux, RawSingle, RawBatched];

    private const string GrpcReason =
        "the packages cannot be restored from the configured NuGet source. " +
        "dotnet add package Grpc.Net.Client --version 2.85.0: \"error: NU1101: Unable to find package Grpc.Net.Common. No packages exist with this id in source(s): nuget.org\"; " +
        "dotnet add package Grpc.AspNetCore --version 2.85.0: \"error: NU1101: Unable to find package Grpc.AspNetCore.Server.ClientFactory. No packages exist with this id in source(s): nuget.org\", " +
        "\"error: NU1102: Unable to find package Google.Protobuf with version (>= 3.36.2)\" (\"Found 6 version(s) in nuget.org [ Nearest version: 3.25.1 ]\"); " +
        "dotnet add package Grpc.Core.Api --version 2.76.0: \"error: NU1101: Unable to find package Grpc.Core.Api. No packages exist with this id in source(s): nuget.org\"";

    /// <summary>
    /// Accepted by --systems but not built: their NuGet packages (or their dependencies) are missing
    /// from the package source this repository builds from. The reasons quote the errors of
    /// `dotnet add package` in a scratch net10.0 project against that source.
    /// </summary>
    public static readonly IReadOnlyDictionary<string, string> Unavailable = new Dictionary<string, string>
    {
        ["grpc"] = GrpcReason,
        ["grpc-default"] = GrpcReason,
        ["streamjsonrpc"] =
            "the package cannot be restored from the configured NuGet source. " +
            "dotnet add package StreamJsonRpc --version 2.26.150: " +
            "\"error: NU1101: Unable to find package MessagePack. No packages exist with this id in source(s): nuget.org\", " +
            "\"error: NU1101: Unable to find package Microsoft.VisualStudio.Threading.Only. No packages exist with this id in source(s): nuget.org\", " +
            "\"error: NU1101: Unable to find package Nerdbank.MessagePack. No packages exist with this id in source(s): nuget.org\", " +
            "\"error: NU1101: Unable to find package Nerdbank.Streams. No packages exist with this id in source(s): nuget.org\", " +
            "\"error: NU1101: Unable to find package Microsoft.VisualStudio.Validation. No packages exist with this id in source(s): nuget.org\"",
        ["xrpc"] =
            "the package cannot be restored from the configured NuGet source. " +
            "dotnet add package BeetleX.XRPC: \"error: There are no versions available for the package 'BeetleX.XRPC'.\"",
    };

    public static IEnumerable<string> All => Runnable.Concat(Unavailable.Keys);

    public static bool IsKnown(string system) => Runnable.Contains(system) || Unavailable.ContainsKey(system);
}
