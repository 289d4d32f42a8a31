using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Mux.Hosting;

/// <summary>Holds the shared client once the host has connected it; backs the
/// <see cref="MuxClient"/> singleton that AddMuxClient registers.</summary>
internal sealed class MuxClientHolder
{
    private volatile MuxClient? _client;

    public MuxClient? Client
    {
        get => _client;
        set => _client = value;
    }

    public MuxClient GetConnectedClient() => _client ?? throw new InvalidOperationException(
        "The Mux client is not connected yet: the host connects it when it starts. Resolve MuxClient and Mux proxies after the host has started (IHost.StartAsync or RunAsync), for example in BackgroundService.ExecuteAsync or a request handler, not in a constructor that runs while the host starts.");
}

/// <summary>
/// Connects the one shared <see cref="MuxClient"/> of AddMuxClient when the host starts (a server
/// that cannot be reached fails the start with <see cref="MuxConnectionException"/>) and disposes
/// it when the host stops.
/// </summary>
internal sealed class MuxClientHostedService(
    IOptions<MuxClientOptions> options,
    MuxClientHolder holder,
    ILoggerFactory? loggerFactory = null)
    : IHostedService, IAsyncDisposable
{
    private readonly ILogger _logger = (loggerFactory ?? NullLoggerFactory.Instance).CreateLogger(MuxHostingLog.Category);

    // Set when the host stops the client, so that the close is not reported as a lost connection.
    private volatile bool _stopping;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        if (holder.Client is not null)
        {
            throw new InvalidOperationException("The Mux client has already been connected; a host starts once.");
        }

        MuxClientOptions clientOptions = options.Value; // Binding errors surface here, at host start.
        if (clientOptions.EndPoint is null)
        {
            throw new InvalidOperationException("MuxClientOptions.EndPoint is not set. Set it in AddMuxClient(o => o.EndPoint = new IPEndPoint(IPAddress.Loopback, 5000)) or with the configuration key Mux:Client:Connect, for example \"127.0.0.1:5000\".");
        }

        MuxClient client = await MuxClient.ConnectAsync(clientOptions, cancellationToken).ConfigureAwait(false);
        holder.Client = client;
        string endPoint = Describe(client, clientOptions);
        MuxHostingLog.ClientConnected(_logger, endPoint);
        _ = client.Completion.ContinueWith(
            static (_, state) => ((MuxClientHostedService)state!).OnClosed(),
            this,
            CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously,
            TaskScheduler.Default);
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        _stopping = true;
        if (holder.Client is { } client)
        {
            await client.DisposeAsync().ConfigureAwait(false);
            MuxHostingLog.ClientDisconnected(_logger, Describe(client, options.Value));
        }
    }

    /// <summary>Closes the connection if the host did not stop the client (for example when a
    /// later hosted service failed to start).</summary>
    public async ValueTask DisposeAsync()
    {
        _stopping = true;
        if (holder.Client is { } client)
        {
            await client.DisposeAsync().ConfigureAwait(false);
        }
    }

    private void OnClosed()
    {
        if (!_stopping && holder.Client is { } client)
        {
            MuxHostingLog.ClientConnectionLost(_logger, Describe(client, options.Value));
        }
    }

    private static string Describe(MuxClient client, MuxClientOptions options) =>
        (client.RemoteEndPoint ?? options.EndPoint)?.ToString() ?? "?";
}
