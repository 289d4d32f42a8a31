using BenchmarkDotNet.Attributes;
using Mux.Samples.Contracts;
using Mux.Serialization;

namespace Mux.Benchmarks;

/// <summary>
/// The MessagePack serializer alone on the List(count) result: the generated [MuxObject]
/// formatter of <see cref="User"/> inside the list formatter. Set beside <see cref="CallBenchmarks"/>
/// it separates what a call costs in Mux (frames, pipes, threads) from what its payload costs.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class SerializationBenchmarks
{
    private readonly PooledBufferWriter _output = new(64 * 1024);
    private IMuxFormatter<List<User>> _formatter = null!;
    private List<User> _users = null!;
    private byte[] _bytes = null!;

    [Params(1, 100)]
    public int Users { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        UserServiceContracts.EnsureRegistered();
        _formatter = MuxFormatterResolver.GetFormatter<List<User>>();
        _users = UserServiceContracts.CreateUsers(Users);
        Serialize();
        _bytes = _output.WrittenSpan.ToArray();
        if (Deserialize().Count != Users)
        {
            throw new InvalidOperationException("The users did not survive a round trip.");
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _output.Dispose();

    [Benchmark]
    public long Serialize()
    {
        _output.Reset();
        var writer = new MessagePackWriter(_output);
        _formatter.Serialize(ref writer, _users);
        return writer.BytesWritten;
    }

    [Benchmark]
    public List<User> Deserialize()
    {
        var reader = new MessagePackReader(_bytes);
        return _formatter.Deserialize(ref reader);
    }
}
