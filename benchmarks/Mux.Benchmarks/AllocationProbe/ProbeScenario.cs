using Mux.Protocol;
using Mux.Samples.Contracts;
using MessagePack;
using Mux.Serialization;

namespace Mux.Benchmarks.AllocationProbe;

/// <summary>
/// One kind of call the probe measures: Add(1, 2), alone or <see cref="Batch"/> at once, or
/// List(count) when <see cref="ListCount"/> is not 0; Add served by <see cref="LaterUserService"/>
/// when <see cref="CompletesLater"/>.
/// </summary>
internal sealed class ProbeScenario
{
    private ProbeScenario(string name, int listCount, int batch, int batchesPerRound, bool completesLater = false)
    {
        Name = name;
        CompletesLater = completesLater;
        ListCount = listCount;
        Batch = batch;
        BatchesPerRound = batchesPerRound;
        if (listCount == 0)
        {
            MethodId = UserServiceContracts.AddMethodId;
            Request = StubFrames.Encode(FrameType.Request, MethodId, new MessagePackBody<AddArguments>(new AddArguments(1, 2), s_options));
            Response = StubFrames.Encode(FrameType.Response, 0, new MessagePackBody<int>(3, s_options));
        }
        else
        {
            MethodId = UserServiceContracts.ListMethodId;
            Request = StubFrames.Encode(FrameType.Request, MethodId, new MessagePackBody<ListArguments>(new ListArguments(listCount), s_options));
            Response = StubFrames.Encode(FrameType.Response, 0, new MessagePackBody<List<User>>(UserServiceContracts.CreateUsers(listCount), s_options));
        }
    }

    /// <summary>The options a Mux client uses by default.</summary>
    private static readonly MessagePackSerializerOptions s_options = MuxSerializerOptions.ForClient(MessagePackSerializerOptions.Standard);

    public string Name { get; }

    public int ListCount { get; }

    /// <summary>Whether the server's handler completes after it returned (on a thread-pool thread).</summary>
    public bool CompletesLater { get; }

    /// <summary>How many calls are in flight at once (1 for every List).</summary>
    public int Batch { get; }

    public int BatchesPerRound { get; }

    public int CallsPerRound => Batch * BatchesPerRound;

    public uint MethodId { get; }

    /// <summary>The Request frame a client sends for this call (call id 0, patched per call).</summary>
    public byte[] Request { get; }

    /// <summary>The Response frame the server sends back (call id 0, patched per call).</summary>
    public byte[] Response { get; }

    /// <summary>The MessagePack of the result: the body of <see cref="Response"/>.</summary>
    public ReadOnlyMemory<byte> ResultBytes => Response.AsMemory(ProtocolConstants.FrameHeaderSize);

    public static ProbeScenario Add(int callsPerRound) => new("Add(1, 2) → ValueTask<int>", 0, 1, callsPerRound);

    public static ProbeScenario AddCompletingLater(int callsPerRound) => new("Add(1, 2) → ValueTask<int>, completing later", 0, 1, callsPerRound, completesLater: true);

    public static ProbeScenario AddBatch(int batch, int batchesPerRound) => new($"Add(1, 2) × {batch} at once", 0, batch, batchesPerRound);

    public static ProbeScenario List(int count, int callsPerRound) => new($"List({count}) → Task<List<User>>", count, 1, callsPerRound);

    /// <summary>Allocates what the client's deserializer allocates for one response: the result objects.</summary>
    public void DeserializeResult()
    {
        if (ListCount == 0)
        {
            _ = MessagePackSerializer.Deserialize<int>(ResultBytes, s_options);
        }
        else
        {
            GC.KeepAlive(MessagePackSerializer.Deserialize<List<User>>(ResultBytes, s_options));
        }
    }

    /// <summary>Allocates what the service method itself allocates for one call.</summary>
    /// <summary>The implementation the server serves this call with.</summary>
    public IUserService CreateService() => CompletesLater ? new LaterUserService() : new UserService();

    public void CallService(IUserService service)
    {
        if (ListCount == 0)
        {
            ValueTask<int> sum = service.Add(1, 2);
            SpinWait spin = default;
            while (!sum.IsCompleted)
            {
                spin.SpinOnce();
            }

            _ = sum.GetAwaiter().GetResult();
        }
        else
        {
            GC.KeepAlive(service.List(ListCount));
        }
    }
}
