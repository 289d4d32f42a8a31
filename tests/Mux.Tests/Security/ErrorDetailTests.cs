using Mux.Tests.Infrastructure;

namespace Mux.Tests.Security;

[MuxService]
public interface IStatusService
{
    Task<string> Find(int id);

    Task Leak(string secret);
}

public sealed class StatusService : IStatusService
{
    public Task<string> Find(int id) => id == 1
        ? Task.FromResult("ada")
        : throw new MuxRemoteException(MuxStatusCode.NotFound, $"No user {id}.");

    public Task Leak(string secret) => throw new InvalidOperationException($"Login failed for '{secret}' at /srv/app/db.cs");
}

public sealed class ErrorDetailTests
{
    private static async Task<(MuxServer Server, MuxClient Client, IStatusService Proxy)> StartAsync(bool detailedErrors)
    {
        var server = new MuxServer(new MuxServerOptions { EnableDetailedErrors = detailedErrors });
        server.AddService<IStatusService>(new StatusService());
        MuxClient client = await server.ConnectInMemoryAsync();
        return (server, client, client.CreateProxy<IStatusService>());
    }

    [Fact]
    public async Task ByDefault_AHandlersException_ReachesTheCallerAsHandlerFailedWithAGenericMessage()
    {
        (MuxServer server, MuxClient client, IStatusService proxy) = await StartAsync(detailedErrors: false);
        await using (server)
        await using (client)
        {
            var error = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Leak("sa:hunter2").WaitAsync(TestHost.Patience));

            Assert.Equal(MuxStatusCode.HandlerFailed, error.StatusCode);
            Assert.Equal("IStatusService.Leak failed on the server. The server's log has the exception; MuxServerOptions.EnableDetailedErrors sends its message to callers.", error.Message);
            Assert.Null(error.RemoteExceptionType);
            Assert.DoesNotContain("hunter2", error.Message, StringComparison.Ordinal);
            Assert.Equal("ada", await proxy.Find(1).WaitAsync(TestHost.Patience)); // The connection is unharmed.
        }
    }

    [Fact]
    public async Task WithDetailedErrors_TheCallerSeesTheHandlersMessageAndExceptionType()
    {
        (MuxServer server, MuxClient client, IStatusService proxy) = await StartAsync(detailedErrors: true);
        await using (server)
        await using (client)
        {
            var error = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Leak("sa:hunter2").WaitAsync(TestHost.Patience));

            Assert.Equal(MuxStatusCode.HandlerFailed, error.StatusCode);
            Assert.Equal("Login failed for 'sa:hunter2' at /srv/app/db.cs", error.Message);
            Assert.Equal("System.InvalidOperationException", error.RemoteExceptionType);
        }
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AHandlerThrowingMuxRemoteException_ChoosesTheStatusAndMessageTheCallerSees(bool detailedErrors)
    {
        (MuxServer server, MuxClient client, IStatusService proxy) = await StartAsync(detailedErrors);
        await using (server)
        await using (client)
        {
            var error = await Assert.ThrowsAsync<MuxRemoteException>(() => proxy.Find(42).WaitAsync(TestHost.Patience));

            Assert.Equal(MuxStatusCode.NotFound, error.StatusCode);
            Assert.Equal("No user 42.", error.Message);
            Assert.Null(error.RemoteExceptionType);
        }
    }
}
