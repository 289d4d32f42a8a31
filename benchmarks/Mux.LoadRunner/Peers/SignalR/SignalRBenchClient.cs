using System.Net;
using Microsoft.AspNetCore.Http.Connections;
using Microsoft.AspNetCore.SignalR.Client;
using Microsoft.Extensions.DependencyInjection;

namespace Mux.LoadRunner.Peers.SignalR;

/// <summary>
/// The SignalR peer's client: one <see cref="HubConnection"/> (one WebSocket, MessagePack hub
/// protocol) shared by every caller. Negotiation is skipped: it would be an extra HTTP request,
/// possibly on an extra connection, before the WebSocket.
/// </summary>
internal sealed class SignalRBenchClient : ByNameBenchClient
{
    private readonly HubConnection _connection;
    private readonly Uri _url;

    private SignalRBenchClient(HubConnection connection, Uri url, string method)
        : base(method)
    {
        _connection = connection;
        _url = url;
    }

    public static async Task<IBenchClient> ConnectAsync(IPEndPoint endPoint, string method, CancellationToken cancellationToken)
    {
        var url = new Uri($"http://{endPoint}{SignalRBenchServer.HubPath}");
        HubConnection connection = await StartConnectionAsync(url, cancellationToken);
        return new SignalRBenchClient(connection, url, method);
    }

    private static async Task<HubConnection> StartConnectionAsync(Uri url, CancellationToken cancellationToken)
    {
        HubConnection connection = new HubConnectionBuilder()
            .WithUrl(url, HttpTransportType.WebSockets, options => options.SkipNegotiation = true)
            .AddMessagePackProtocol()
            .Build();
        try
        {
            await connection.StartAsync(cancellationToken);
            return connection;
        }
        catch
        {
            await connection.DisposeAsync();
            throw;
        }
    }

    protected override Task<T> InvokeAsync<T>(string name, object?[] arguments) =>
        _connection.InvokeCoreAsync<T>(name, arguments);

    public override async Task<ServerStats> GetServerStatsAsync(CancellationToken cancellationToken)
    {
        HubConnection control = await StartConnectionAsync(_url, cancellationToken);
        await using (control)
        {
            return await control.InvokeAsync<ServerStats>("GetStats", cancellationToken);
        }
    }

    public override ValueTask DisposeAsync() => _connection.DisposeAsync();
}
