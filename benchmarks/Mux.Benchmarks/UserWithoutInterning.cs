using MessagePack;

namespace Mux.Benchmarks;

/// <summary>
/// The sample's <see cref="Mux.Samples.Contracts.User"/> as it was before its repeated members
/// opted in to <see cref="MessagePack.Formatters.StringInterningFormatter"/>: the same five members
/// at the same keys (so it reads the same bytes), every string allocated anew. Kept so that
/// <see cref="SerializationBenchmarks"/> shows both in one run.
/// </summary>
[MessagePackObject]
public sealed class UserWithoutInterning
{
    [Key(0)]
    public int ID { get; set; }

    [Key(1)]
    public string? Name { get; set; }

    [Key(2)]
    public string? City { get; set; }

    [Key(3)]
    public string? EMail { get; set; }

    [Key(4)]
    public string? Remark { get; set; }
}
