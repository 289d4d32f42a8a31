using System.Runtime.CompilerServices;
using Mux.Serialization;

namespace Mux.Samples.Load;

// What the Mux source generator will emit for IUserService and ILoadStats: a proxy, a dispatcher,
// and a module initializer that registers both. Written by hand until the generator lands.

internal static class UserServiceMethodIds
{
    // MuxMethodId.Compute("Mux.Samples.Load.IUserService.List"), and so on.
    public const uint List = 0x271874a3;
    public const uint Add = 0x5f7a008e;
    public const uint Touch = 0xb9071892;
    public const uint GetConnectionsAccepted = 0xeb0f4fbc;
}

internal sealed class UserServiceProxy(MuxClient client) : IUserService
{
    public Task<List<User>> List(int count, CancellationToken cancellationToken = default) =>
        client.InvokeAsync<ListArguments, List<User>>(UserServiceMethodIds.List, new ListArguments(count), cancellationToken).AsTask();

    public ValueTask<int> Add(int a, int b) =>
        client.InvokeAsync<AddArguments, int>(UserServiceMethodIds.Add, new AddArguments(a, b));

    public Task Touch(string id) =>
        client.InvokeAsync(UserServiceMethodIds.Touch, new TouchArguments(id)).AsTask();

    private readonly struct ListArguments(int count) : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer)
        {
            writer.WriteArrayHeader(1);
            writer.Write(count);
        }
    }

    private readonly struct AddArguments(int a, int b) : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer)
        {
            writer.WriteArrayHeader(2);
            writer.Write(a);
            writer.Write(b);
        }
    }

    private readonly struct TouchArguments(string id) : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer)
        {
            writer.WriteArrayHeader(1);
            MuxFormatterResolver.GetFormatter<string>().Serialize(ref writer, id);
        }
    }
}

internal sealed class LoadStatsProxy(MuxClient client) : ILoadStats
{
    public ValueTask<long> GetConnectionsAccepted() =>
        client.InvokeAsync<NoArguments, long>(UserServiceMethodIds.GetConnectionsAccepted, default);

    private readonly struct NoArguments : IMuxArguments
    {
        public void Write(ref MessagePackWriter writer) => writer.WriteArrayHeader(0);
    }
}

internal static class UserServiceDispatcher
{
    public static MuxServiceDefinition<IUserService> CreateDefinition() =>
        new MuxServiceDefinition<IUserService>("Mux.Samples.Load.IUserService")
            .AddMethod(UserServiceMethodIds.List, "List", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                int count = call.ReadArgument<int>(ref reader);
                return call.ReturnAsync(service.List(count, call.CancellationToken));
            })
            .AddMethod(UserServiceMethodIds.Add, "Add", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(2);
                int a = call.ReadArgument<int>(ref reader);
                int b = call.ReadArgument<int>(ref reader);
                return call.ReturnAsync(service.Add(a, b));
            })
            .AddMethod(UserServiceMethodIds.Touch, "Touch", static (service, call) =>
            {
                MessagePackReader reader = call.CreateArgumentReader(1);
                string id = call.ReadArgument<string>(ref reader);
                return call.ReturnAsync(service.Touch(id));
            });

    public static MuxServiceDefinition<ILoadStats> CreateStatsDefinition() =>
        new MuxServiceDefinition<ILoadStats>("Mux.Samples.Load.ILoadStats")
            .AddMethod(UserServiceMethodIds.GetConnectionsAccepted, "GetConnectionsAccepted", static (service, call) =>
            {
                call.CreateArgumentReader(0);
                return call.ReturnAsync(service.GetConnectionsAccepted());
            });

    [ModuleInitializer]
    internal static void Register()
    {
        MuxFormatterResolver.TryRegister<User?>(new UserFormatter());
        MuxFormatterResolver.TryRegister<List<User>?>(new ListFormatter<User>());
        MuxServiceRegistry.RegisterProxy<IUserService>(static client => new UserServiceProxy(client));
        MuxServiceRegistry.RegisterProxy<ILoadStats>(static client => new LoadStatsProxy(client));
        MuxServiceRegistry.RegisterService(CreateDefinition());
        MuxServiceRegistry.RegisterService(CreateStatsDefinition());
    }
}
