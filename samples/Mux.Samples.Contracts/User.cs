using MessagePack;

namespace Mux.Samples.Contracts;

/// <summary>The record the BeetleX XRPC sample returns; the load test's payload. Annotated the way
/// every MessagePack-CSharp user does: a MessagePack array [ID, Name, City, EMail, Remark].</summary>
/// <remarks>
/// City, EMail and Remark are the same for every user the sample returns (<see cref="SampleUsers"/>),
/// so they opt in to <see cref="MuxRepeatedStringFormatter"/>: a client reading List(100) shares one
/// instance of each instead of allocating 300 strings (25.7 KB per call becomes 10.5 KB; the bytes on
/// the wire do not change). Name differs per user and is read as usual. Because of the member-level
/// formatters, MessagePack's DynamicObjectResolver serializes this type, not a generated formatter.
/// </remarks>
[MessagePackObject]
public sealed class User
{
    [Key(0)]
    public int ID { get; set; }

    [Key(1)]
    public string? Name { get; set; }

    [Key(2)]
    [MessagePackFormatter(typeof(MuxRepeatedStringFormatter))]
    public string? City { get; set; }

    [Key(3)]
    [MessagePackFormatter(typeof(MuxRepeatedStringFormatter))]
    public string? EMail { get; set; }

    [Key(4)]
    [MessagePackFormatter(typeof(MuxRepeatedStringFormatter))]
    public string? Remark { get; set; }
}
