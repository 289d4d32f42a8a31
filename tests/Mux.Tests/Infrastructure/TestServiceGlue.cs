using System.Runtime.CompilerServices;
using Mux.Serialization;

namespace Mux.Tests.Infrastructure;

// The proxy and dispatcher the source generator will emit for ITestService, written by hand until
// it lands. Method ids are MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService.<Method>").

internal static class TestServiceIds
{
    public const uint Add = 0xa063e920;
    public const uint Echo = 0xd4d62cf8;
    public const uint Delay = 0x7077f3dc;
    public const uint Throw = 0xd48f8303;
    public const uint Block = 0x9a0b620e;
    public const uint WaitForCancellation = 0xf127f8e8;
    public const uint Hang = 0xbb61e14d;
    public const uint Bytes = 0xd01061f0;
}

internal sealed class TestServiceProxy(MuxClient client) : ITestService
{
    public ValueTask<int> Add(int a, int b) => client.InvokeAsync<Args<int, int>, int>(TestServiceIds.Add, new(a, b));

    public Task<string> Echo(string text) => client.InvokeAsync<Args<string>, string>(TestServiceIds.Echo, new(text)).AsTask();

    public Task<int> Delay(int milliseconds, int value) => client.InvokeAsync<Args<int, int>, int>(TestServiceIds.Delay, new(milliseconds, value)).AsTask();

    public Task Throw(string message) => client.InvokeAsync(TestServiceIds.Throw, new Args<string>(message)).AsTask();

    public Task<int> Block(int id) => client.InvokeAsync<Args<int>, int>(TestServiceIds.Block, new(id)).AsTask();

    public Task WaitForCancellation(CancellationToken cancellationToken = default) =>
        client.InvokeAsync(TestServiceIds.WaitForCancellation, default(NoArgs), cancellationToken).AsTask();

    public Task<int> Hang(int id) => client.InvokeAsync<Args<int>, int>(TestServiceIds.Hang, new(id)).AsTask();

    public Task<byte[]> Bytes(int size) => client.InvokeAsync<Args<int>, byte[]>(TestServiceIds.Bytes, new(size)).AsTask();
}

internal readonly struct NoArgs : IMuxArguments
{
    public void Write(ref MessagePackWriter writer) => writer.WriteArrayHeader(0);
}

internal readonly struct Args<T1>(T1 a) : IMuxArguments
{
    public void Write(ref MessagePackWriter writer)
    {
        writer.WriteArrayHeader(1);
        MuxFormatterResolver.GetFormatter<T1>().Serialize(ref writer, a);
    }
}

internal readonly struct Args<T1, T2>(T1 a, T2 b) : IMuxArguments
{
    public void Write(ref MessagePackWriter writer)
    {
        writer.WriteArrayHeader(2);
        MuxFormatterResolver.GetFormatter<T1>().Serialize(ref writer, a);
        MuxFormatterResolver.GetFormatter<T2>().Serialize(ref writer, b);
    }
}

internal static class TestServiceDispatcher
{
    public static MuxServiceDefinition<ITestService> CreateDefinition() =>
        new MuxServiceDefinition<ITestService>("Mux.Tests.Infrastructure.ITestService")
            .AddMethod(TestServiceIds.Add, "Add", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(2);
                int a = call.ReadArgument<int>(ref reader);
                int b = call.ReadArgument<int>(ref reader);
                return call.ReturnAsync(service.Add(a, b));
            })
            .AddMethod(TestServiceIds.Echo, "Echo", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                return call.ReturnAsync(service.Echo(call.ReadArgument<string>(ref reader)));
            })
            .AddMethod(TestServiceIds.Delay, "Delay", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(2);
                int milliseconds = call.ReadArgument<int>(ref reader);
                int value = call.ReadArgument<int>(ref reader);
                return call.ReturnAsync(service.Delay(milliseconds, value));
            })
            .AddMethod(TestServiceIds.Throw, "Throw", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                return call.ReturnAsync(service.Throw(call.ReadArgument<string>(ref reader)));
            })
            .AddMethod(TestServiceIds.Block, "Block", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                return call.ReturnAsync(service.Block(call.ReadArgument<int>(ref reader)));
            })
            .AddMethod(TestServiceIds.WaitForCancellation, "WaitForCancellation", static (service, call) =>
            {
                call.CreateArgumentReader(0);
                return call.ReturnAsync(service.WaitForCancellation(call.CancellationToken));
            })
            .AddMethod(TestServiceIds.Hang, "Hang", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                return call.ReturnAsync(service.Hang(call.ReadArgument<int>(ref reader)));
            })
            .AddMethod(TestServiceIds.Bytes, "Bytes", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                return call.ReturnAsync(service.Bytes(call.ReadArgument<int>(ref reader)));
            });

    [ModuleInitializer]
    internal static void Register()
    {
        MuxServiceRegistry.RegisterProxy<ITestService>(static client => new TestServiceProxy(client));
        MuxServiceRegistry.RegisterService(CreateDefinition());
    }
}
