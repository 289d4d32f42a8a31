using System.Runtime.CompilerServices;
using Mux.Serialization;

namespace Mux.Hosting.Tests;

// TEMPORARY: the proxy and dispatcher that the Mux source generator will emit for
// IHostingTestService, written by hand until the generator lands. This file is replaced by the
// generator (delete it then); the hosting code and the tests depend only on IHostingTestService
// being registered in MuxServiceRegistry, not on anything in here.

internal static class HostingTestServiceGlue
{
    private const string Prefix = "Mux.Hosting.Tests.IHostingTestService.";

    private static readonly uint s_add = MuxMethodId.Compute(Prefix + "Add");
    private static readonly uint s_getInstanceId = MuxMethodId.Compute(Prefix + "GetInstanceId");
    private static readonly uint s_waitForGate = MuxMethodId.Compute(Prefix + "WaitForGate");
    private static readonly uint s_fail = MuxMethodId.Compute(Prefix + "Fail");

    [ModuleInitializer]
    internal static void Register()
    {
        MuxServiceRegistry.RegisterProxy<IHostingTestService>(static client => new Proxy(client));
        MuxServiceRegistry.RegisterService(
            new MuxServiceDefinition<IHostingTestService>("Mux.Hosting.Tests.IHostingTestService")
                .AddMethod(s_add, "Add", static (service, call) =>
                {
                    MessagePackReader reader = call.CreateArgumentReader(2);
                    int a = call.ReadArgument<int>(ref reader);
                    int b = call.ReadArgument<int>(ref reader);
                    return call.ReturnAsync(service.Add(a, b));
                })
                .AddMethod(s_getInstanceId, "GetInstanceId", static (service, call) =>
                {
                    call.CreateArgumentReader(0);
                    return call.ReturnAsync(service.GetInstanceId());
                })
                .AddMethod(s_waitForGate, "WaitForGate", static (service, call) =>
                {
                    MessagePackReader reader = call.CreateArgumentReader(1);
                    return call.ReturnAsync(service.WaitForGate(call.ReadArgument<int>(ref reader)));
                })
                .AddMethod(s_fail, "Fail", static (service, call) =>
                {
                    MessagePackReader reader = call.CreateArgumentReader(1);
                    return call.ReturnAsync(service.Fail(call.ReadArgument<string>(ref reader)));
                }));
    }

    private sealed class Proxy(MuxClient client) : IHostingTestService
    {
        public ValueTask<int> Add(int a, int b) => client.InvokeAsync<Args<int, int>, int>(s_add, new(a, b));

        public Task<int> GetInstanceId() => client.InvokeAsync<NoArgs, int>(s_getInstanceId, default).AsTask();

        public Task<int> WaitForGate(int value) => client.InvokeAsync<Args<int>, int>(s_waitForGate, new(value)).AsTask();

        public Task Fail(string message) => client.InvokeAsync(s_fail, new Args<string>(message)).AsTask();
    }

    private readonly struct NoArgs : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer) => writer.WriteArrayHeader(0);
    }

    private readonly struct Args<T1>(T1 a) : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer)
        {
            writer.WriteArrayHeader(1);
            MuxFormatterResolver.GetFormatter<T1>().Serialize(ref writer, a);
        }
    }

    private readonly struct Args<T1, T2>(T1 a, T2 b) : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer)
        {
            writer.WriteArrayHeader(2);
            MuxFormatterResolver.GetFormatter<T1>().Serialize(ref writer, a);
            MuxFormatterResolver.GetFormatter<T2>().Serialize(ref writer, b);
        }
    }
}
