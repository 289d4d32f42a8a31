using MessagePack;

namespace Mux.Samples.Contracts;

/// <summary>The record the BeetleX XRPC sample returns; the load test's payload. Annotated the way
/// every MessagePack-CSharp user does; Mux generates its formatter: a MessagePack array
/// [ID, Name, City, EMail, Remark], the bytes MessagePack's own resolver writes.</summary>
[MessagePackObject]
public sealed class User
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
