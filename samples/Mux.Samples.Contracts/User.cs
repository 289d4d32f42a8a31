namespace Mux.Samples.Contracts;

/// <summary>The record the BeetleX XRPC sample returns; the load test's payload. Mux generates its
/// formatter: a MessagePack array [ID, Name, City, EMail, Remark], in declaration order.</summary>
[MuxObject]
public sealed class User
{
    public int ID { get; set; }

    public string? Name { get; set; }

    public string? City { get; set; }

    public string? EMail { get; set; }

    public string? Remark { get; set; }
}
