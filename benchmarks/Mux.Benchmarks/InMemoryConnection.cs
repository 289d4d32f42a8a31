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

    /// <summary>Starts the server and connects the client; <paramref name="serverInterceptors"/>
    /// and <paramref name="clientInterceptors"/> run around every call of their side.</summary>
    public static async Task<InMemoryConnection> StartAsync(IMuxServerInterceptor[]? serverInterceptors = null, IMuxClientInterceptor[]? clientInterceptors = null)
    {
        UserServiceContracts.EnsureRegistered();
        var serverOptions = new MuxServerOptions();
        foreach (IMuxServerInterceptor interceptor in serverInterceptors ?? [])
        {
            serverOptions.Interceptors.Add(interceptor);
        }

        var server = new MuxServer(serverOptions);
        server.AddService<IUserService>(new UserService());
        var clientOptions = new MuxClientOptions();
        foreach (IMuxClientInterceptor interceptor in clientInterceptors ?? [])
        {
            clientOptions.Interceptors.Add(interceptor);
        }

        MuxClient client = await server.ConnectInMemoryAsync(clientOptions);
        return new InMemoryConnection(server, client);
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Server.DisposeAsync();
    }
}
