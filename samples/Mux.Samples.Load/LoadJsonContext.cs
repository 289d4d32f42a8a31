using System.Text.Json.Serialization;

namespace Mux.Samples.Load;

/// <summary>Source-generated JSON for the summary line (no reflection).</summary>
[JsonSerializable(typeof(Dictionary<string, object?>))]
[JsonSerializable(typeof(string))]
[JsonSerializable(typeof(int))]
[JsonSerializable(typeof(long))]
[JsonSerializable(typeof(double))]
[JsonSerializable(typeof(bool))]
internal sealed partial class LoadJsonContext : JsonSerializerContext
{
}
