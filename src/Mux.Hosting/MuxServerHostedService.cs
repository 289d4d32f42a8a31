using System.Net.Sockets;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Mux.Hosting;

/// <summary>Holds the server once the host has started it; backs the <see cref="MuxServer"/> singleton of AddMuxServer.</summary>
internal sealed class MuxServerHolder
{
    private volatile MuxServer? _server;

    public MuxServer? Server
    {
        get => _server;
        set => _server = value;
    }

    public MuxServer GetStartedServer() => _server ?? throw new InvalidOperationException(
        "The Mux server has not started yet. MuxServer is available from the service provider once the host has started " +
        "(IHost.StartAsync or RunAsync); resolve it after that, not in a constructor that runs while the host starts.");
}

/// <summary>
/// Disposes the server of AddMuxServer when the service provider is disposed, before the singletons that serve its calls.
/// DI disposes in the reverse order it made things, and the hosted service was made before those singletons; it resolves
/// this closer once they are made, so that the server drains its calls before they are disposed.
/// </summary>
internal sealed class MuxServerCloser(MuxServerHolder holder) : IAsyncDisposable
{
    public ValueTask DisposeAsync() => holder.Server is { } server ? server.DisposeAsync() : default;
}

/// <summary>
/// Runs the <see cref="MuxServer"/> of AddMuxServer with the host: builds it from the options and the AddService
/// registrations and starts it when the host starts; when the host stops, sends GoAway and drains the calls in flight
/// until the host's shutdown timeout.
/// </summary>
internal sealed class MuxServerHostedService(
    IOptions<MuxServerOptions> options,
    IEnumerable<MuxServiceBinding> bindings,
    MuxServerHolder holder,
    IServiceProvider services,
    ILoggerFactory? loggerFactory = null)
    : IHostedService, IAsyncDisposable
{
    private readonly ILogger _logger = (loggerFactory ?? NullLoggerFactory.Instance).CreateLogger(MuxHostingLog.Category);

    // Held only to set or read _stopped with holder.Server: a server started as the host stopped is disposed, not kept.
    private readonly Lock _lock = new();

    // Under _lock: the host has stopped the server (or never started it before stopping).
    private bool _stopped;

    // Under _lock: a start is under way or has succeeded; claimed first, so a second start fails rather than listens twice.
    private bool _started;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        lock (_lock)
        {
            if (_started)
            {
                throw new InvalidOperationException("The Mux server has already been started; a host starts once.");
            }

            _started = true;
        }

        try
        {
            await StartServerAsync(cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            lock (_lock)
            {
                _started = false; // A failed start may be tried again.
            }

            throw;
        }
    }

    private async Task StartServerAsync(CancellationToken cancellationToken)
    {

        MuxServerOptions serverOptions = options.Value; // Binding and validation errors surface here, at host start.
        var server = new MuxServer(serverOptions);
        int count = 0;
        try
        {
            foreach (MuxServiceBinding binding in bindings)
            {
                binding.AddTo(server, services, _logger);
                count++;
            }

            // Made after the singletons that serve the calls, so that DI disposes it before them.
            services.GetRequiredService<MuxServerCloser>();

            // The host's start was abandoned (it is stopping), perhaps while the services above were made: do not listen.
            cancellationToken.ThrowIfCancellationRequested();
            await server.StartAsync(cancellationToken).ConfigureAwait(false);
            lock (_lock)
            {
                if (_stopped)
                {
                    throw new OperationCanceledException("The host stopped while the Mux server was starting.");
                }

                holder.Server = server;
            }
        }
        catch (Exception ex)
        {
            if (ex is SocketException)
            {
                // The socket's message ("Address already in use") does not say which address.
                MuxHostingLog.ServerListenFailed(_logger, serverOptions.EndPoint?.ToString() ?? "?", ex);
            }

            await server.DisposeAsync().ConfigureAwait(false);
            if (ex is InvalidOperationException invalid
                && MuxConfigurationValues.NameKey(
                    invalid, services.GetService<IConfiguration>(), MuxServerConfiguration.SectionName, nameof(MuxServerOptions)) is { } named)
            {
                throw named; // Out-of-range options, refused by StartAsync.
            }

            throw;
        }

        MuxHostingLog.ServerStarted(_logger, Describe(server), count);
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        MuxServer? server;
        lock (_lock)
        {
            _stopped = true;
            server = holder.Server;
        }

        if (server is null)
        {
            return; // Never started.
        }

        string endPoint = Describe(server);
        MuxHostingLog.ServerStopping(_logger, endPoint, server.ActiveConnections);
        await server.StopAsync(cancellationToken).ConfigureAwait(false);
        MuxHostingLog.ServerStopped(_logger, endPoint);
    }

    /// <summary>Stops the server if the host did not (a later hosted service failed to start, say), so the listening
    /// socket never outlives the service provider.</summary>
    public async ValueTask DisposeAsync()
    {
        if (holder.Server is { } server)
        {
            await server.DisposeAsync().ConfigureAwait(false);
        }
    }

    // Without an endpoint of its own the server serves only its ASP.NET Core host's MapMux endpoints.
    private static string Describe(MuxServer server) => server.LocalEndPoint?.ToString() ?? "its host's endpoints";
}
