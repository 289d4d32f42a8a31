using Mux.Serialization;

namespace Mux.Benchmarks;

/// <summary>The arguments of IUserService.Add(a, b), written as the generated proxy writes them.</summary>
internal readonly struct AddArguments(int a, int b) : IMuxArguments
{
    private readonly int _a = a;
    private readonly int _b = b;

    public void Write(ref MessagePackWriter writer)
    {
        writer.WriteArrayHeader(2);
        writer.Write(_a);
        writer.Write(_b);
    }
}

/// <summary>The arguments of IUserService.List(count) (the CancellationToken is not sent).</summary>
internal readonly struct ListArguments(int count) : IMuxArguments
{
    private readonly int _count = count;

    public void Write(ref MessagePackWriter writer)
    {
        writer.WriteArrayHeader(1);
        writer.Write(_count);
    }
}
