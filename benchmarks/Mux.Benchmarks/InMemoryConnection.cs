using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>
/// A Mux server serving the sample <see cref="UserService"/> and one client connected to it over
/// in-memory pipes (no socket), as the tests set it up; <see cref="Proxy"/> is the generated proxy.
/// </summary>
internal sealed class InMemoryConnection : IAsyncDisposable
{
    private InMemoryConnection(MuxServer server, MuxClient client)
    {
        Server = server;
        Client = client;
        Proxy = client.CreateProxy<IUserService>();
    }

    public MuxServer Server { get; }

    public MuxClient Client { get; }

    public IUserService Proxy { get; }

    public static async Task<InMemoryConnection> StartAsync()
    {
        UserServiceContracts.EnsureRegistered();
        var server = new MuxServer(new MuxServerOptions());
        server.AddService<IUserService>(new UserService());
        MuxClient client = await server.ConnectInMemoryAsync();
        return new InMemoryConnection(server, client);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Server.DisposeAsync();
    }
}
