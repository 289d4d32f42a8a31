using BenchmarkDotNet.Attributes;
using MessagePack;
using Mux.Protocol;
using Mux.Samples.Contracts;
using Mux.Serialization;

namespace Mux.Benchmarks;

/// <summary>
/// The serializer alone, on what one call moves: the List(count) result (the generated formatter
/// of the [MessagePackObject] <see cref="User"/> inside MessagePack's list formatter) and the Add
/// argument list, with the options a Mux connection uses. Set beside <see cref="CallBenchmarks"/>
/// it separates what a call costs in Mux (frames, pipes, threads) from what its payload costs.
/// </summary>
[MemoryDiagnoser]
[Config(typeof(MuxJobConfig))]
public class SerializationBenchmarks
{
    private static readonly MessagePackSerializerOptions s_options = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    private readonly PooledBufferWriter _output = new(64 * 1024);
    private List<User> _users = null!;
    private byte[] _bytes = null!;
    private byte[] _addBytes = null!;

    [Params(1, 100)]
    public int Users { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        UserServiceContracts.EnsureRegistered();
        _users = UserServiceContracts.CreateUsers(Users);
        Serialize();
        _bytes = _output.WrittenSpan.ToArray();
        _addBytes = MessagePackSerializer.Serialize(new AddArguments(1, 2), s_options);
        if (Deserialize().Count != Users || DeserializeWithoutInterning().Count != Users || AddRoundTrip() != 3)
        {
            throw new InvalidOperationException("The values did not survive a round trip.");
        }
    }

    [GlobalCleanup]
    public void Cleanup() => _output.Dispose();

    [Benchmark]
    public long Serialize()
    {
        _output.Reset();
        var writer = new MessagePackWriter(_output);
        MessagePackSerializer.Serialize(ref writer, _users, s_options);
        writer.Flush();
        return _output.WrittenCount;
    }

    [Benchmark]
    public List<User> Deserialize() => MessagePackSerializer.Deserialize<List<User>>(_bytes, s_options);

    /// <summary>The same bytes read into a copy of <see cref="User"/> whose strings are not interned:
    /// what <see cref="Deserialize"/> cost before the sample's contract opted in.</summary>
    [Benchmark]
    public List<UserWithoutInterning> DeserializeWithoutInterning() =>
        MessagePackSerializer.Deserialize<List<UserWithoutInterning>>(_bytes, s_options);

    /// <summary>Add's arguments written and read back, and its int result: what both ends serialize per Add call.</summary>
    [Benchmark]
    public int AddRoundTrip()
    {
        _output.Reset();
        var writer = new MessagePackWriter(_output);
        MessagePackSerializer.Serialize(ref writer, new AddArguments(1, 2), s_options);
        MessagePackSerializer.Serialize(ref writer, 3, s_options);
        writer.Flush();
        AddArguments arguments = MessagePackSerializer.Deserialize<AddArguments>(_addBytes, s_options);
        return arguments.A + arguments.B;
    }
}
