using System.Runtime.CompilerServices;
using MessagePack;
using MessagePack.Formatters;
using Mux.Serialization;

namespace Mux.Benchmarks;

/// <summary>The arguments of IUserService.Add(a, b), written as the generated argument formatter writes them.</summary>
internal readonly struct AddArguments(int a, int b)
{
    public readonly int A = a;
    public readonly int B = b;

    [ModuleInitializer]
    internal static void Register()
    {
        MuxFormatters.Register(new AddArgumentsFormatter());
        MuxFormatters.Register(new ListArgumentsFormatter());
    }
}

/// <summary>The arguments of IUserService.List(count) (the CancellationToken is not sent).</summary>
internal readonly struct ListArguments(int count)
{
    public readonly int Count = count;
}

internal sealed class AddArgumentsFormatter : IMessagePackFormatter<AddArguments>
{
    public void Serialize(ref MessagePackWriter writer, AddArguments value, MessagePackSerializerOptions options)
    {
        writer.WriteArrayHeader(2);
        writer.Write(value.A);
        writer.Write(value.B);
    }

    public AddArguments Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options)
    {
        reader.ReadArrayHeader();
        return new AddArguments(reader.ReadInt32(), reader.ReadInt32());
    }
}

internal sealed class ListArgumentsFormatter : IMessagePackFormatter<ListArguments>
{
    public void Serialize(ref MessagePackWriter writer, ListArguments value, MessagePackSerializerOptions options)
    {
        writer.WriteArrayHeader(1);
        writer.Write(value.Count);
    }

    public ListArguments Deserialize(ref MessagePackReader reader, MessagePackSerializerOptions options)
    {
        reader.ReadArrayHeader();
        return new ListArguments(reader.ReadInt32());
    }
}
