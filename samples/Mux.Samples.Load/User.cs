using Mux.Serialization;

namespace Mux.Samples.Load;

/// <summary>The record the BeetleX XRPC sample returns; the load test's payload.</summary>
public sealed class User
{
    public int ID { get; set; }

    public string? Name { get; set; }

    public string? City { get; set; }

    public string? EMail { get; set; }

    public string? Remark { get; set; }
}

/// <summary>
/// Writes a <see cref="User"/> as a MessagePack array [ID, Name, City, EMail, Remark]. The
/// generator will emit formatters like this one for [MuxObject] types; until then it is written by hand.
/// </summary>
public sealed class UserFormatter : IMuxFormatter<User?>
{
    public void Serialize(ref MessagePackWriter writer, User? value)
    {
        if (value is null)
        {
            writer.WriteNil();
            return;
        }

        writer.WriteArrayHeader(5);
        writer.Write(value.ID);
        writer.Write(value.Name);
        writer.Write(value.City);
        writer.Write(value.EMail);
        writer.Write(value.Remark);
    }

    public User? Deserialize(ref MessagePackReader reader)
    {
        if (reader.TryReadNil())
        {
            return null;
        }

        int count = reader.ReadArrayHeader();
        var user = new User();
        for (int i = 0; i < count; i++)
        {
            switch (i)
            {
                case 0: user.ID = reader.ReadInt32(); break;
                case 1: user.Name = reader.ReadString(); break;
                case 2: user.City = reader.ReadString(); break;
                case 3: user.EMail = reader.ReadString(); break;
                case 4: user.Remark = reader.ReadString(); break;
                default: reader.Skip(); break; // Fields added by a newer contract.
            }
        }

        return user;
    }
}
