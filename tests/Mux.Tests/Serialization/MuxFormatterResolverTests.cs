using Mux.Serialization;
using static Mux.Tests.Serialization.MessagePackTestHelpers;

namespace Mux.Tests.Serialization;

// Each test uses its own types: the resolver is process-wide and tests run in parallel.
public class MuxFormatterResolverTests
{
    [Fact]
    public void GetFormatter_ForAnUnregisteredType_ThrowsTellingHowToFixIt()
    {
        var ex = Assert.Throws<MuxSerializationException>(() => MuxFormatterResolver.GetFormatter<Unregistered>());
        string name = typeof(Unregistered).FullName!;
        Assert.Equal(
            $"No MessagePack formatter is registered for type '{name}'. Mark the type with [MuxObject] so Mux generates one, or call MuxFormatterResolver.Register<{name}>(...) at startup.",
            ex.Message);
        Assert.Equal("Mux.Tests.Serialization.MuxFormatterResolverTests+Unregistered", name);
    }

    [Fact]
    public void CollectionFormatter_OfAnUnregisteredElementType_ThrowsOnFirstUse()
    {
        var formatter = new ListFormatter<Unregistered>();
        Assert.Throws<MuxSerializationException>(() => Serialize(formatter, [new Unregistered()]));
    }

    [Fact]
    public void Register_ReplacesAnEarlierRegistration()
    {
        var first = new ConstantFormatter<ReplacedType>(1);
        var second = new ConstantFormatter<ReplacedType>(2);
        MuxFormatterResolver.Register(first);
        Assert.Same(first, MuxFormatterResolver.GetFormatter<ReplacedType>());
        MuxFormatterResolver.Register(second);
        Assert.Same(second, MuxFormatterResolver.GetFormatter<ReplacedType>());
        Assert.Equal(Hex("02"), Serialize(new ReplacedType()));
    }

    [Fact]
    public void TryRegister_DoesNotReplaceAnEarlierRegistration()
    {
        var explicitOne = new ConstantFormatter<KeptType>(1);
        var generated = new ConstantFormatter<KeptType>(2);
        MuxFormatterResolver.Register(explicitOne);
        Assert.False(MuxFormatterResolver.TryRegister(generated));
        Assert.Same(explicitOne, MuxFormatterResolver.GetFormatter<KeptType>());
    }

    [Fact]
    public void TryRegister_RegistersWhenThereIsNoFormatterYet_AndRegisterCanStillReplaceIt()
    {
        var generated = new ConstantFormatter<FreshType>(1);
        var explicitOne = new ConstantFormatter<FreshType>(2);
        Assert.True(MuxFormatterResolver.TryRegister(generated));
        Assert.Same(generated, MuxFormatterResolver.GetFormatter<FreshType>());
        MuxFormatterResolver.Register(explicitOne);
        Assert.Same(explicitOne, MuxFormatterResolver.GetFormatter<FreshType>());
    }

    [Fact]
    public void TryRegister_DoesNotReplaceABuiltInFormatter()
    {
        Assert.False(MuxFormatterResolver.TryRegister(new ConstantFormatter<int>(9)));
        Assert.Equal(Hex("cd012c"), Serialize(300));
    }

    [Fact]
    public void Register_OfNull_Throws()
    {
        Assert.Throws<ArgumentNullException>(() => MuxFormatterResolver.Register<NullType>(null!));
        Assert.Throws<ArgumentNullException>(() => MuxFormatterResolver.TryRegister<NullType>(null!));
        Assert.Throws<MuxSerializationException>(() => MuxFormatterResolver.GetFormatter<NullType>());
    }

    [Fact]
    public void ConcurrentTryRegister_LetsExactlyOneWin()
    {
        var formatters = new ConstantFormatter<RacedType>[8];
        for (int i = 0; i < formatters.Length; i++)
        {
            formatters[i] = new ConstantFormatter<RacedType>(i);
        }

        int wins = 0;
        Parallel.For(0, formatters.Length, i =>
        {
            if (MuxFormatterResolver.TryRegister(formatters[i]))
            {
                Interlocked.Increment(ref wins);
            }
        });

        Assert.Equal(1, wins);
        Assert.Contains(MuxFormatterResolver.GetFormatter<RacedType>(), formatters);
    }

    public sealed class Unregistered;

    public sealed class ReplacedType;

    public sealed class KeptType;

    public sealed class FreshType;

    public sealed class NullType;

    public sealed class RacedType;

    private sealed class ConstantFormatter<T>(int marker) : IMuxFormatter<T>
    {
        public void Serialize(ref MessagePackWriter writer, T value) => writer.Write(marker);

        public T Deserialize(ref MessagePackReader reader) => throw new NotSupportedException();
    }
}
