using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Mux.Hosting;

/// <summary>Creates the one shared client of AddMuxClient on first use and backs the <see cref="MuxClient"/> singleton.
/// It takes its options when it makes the client, not in its constructor: making them may need the client, and only
/// <see cref="GetClient"/> can tell that recursion from a first request.</summary>
internal sealed class MuxClientHolder(IServiceProvider provider) : IAsyncDisposable, IDisposable
{
    // Held to make the options and the client, never while its services are made: they may need a DI lock held by a
    // thread that asks for the client.
    private readonly Lock _lock = new();

    // Held only to set or read _stopped with _client, never while the client is made: one made as the host stopped is closed.
    private readonly Lock _stopLock = new();

    // Set once, under _lock, with every AddService applied; read without it afterwards.
    private volatile MuxClient? _client;

    // Under _lock: the options (and with them the interceptors) are being made for the client.
    private bool _creating;

    // Under _lock: the client whose services are being added, and whether it was handed out meanwhile (DI keeps it then).
    private MuxClient? _pending;
    private bool _handedOut;

    // Under _lock: why a client that had been handed out could not be made. Final.
    private Exception? _failure;

    // Under _stopLock: the host has stopped the client; none is made (or kept) from now on.
    private bool _stopped;

    public MuxClient? Client => _client;

    /// <summary>The client, created and connecting in the background on the first call. If one of its services cannot
    /// be made, the half-made client is closed and the failure thrown as it is; the next call tries again, unless the
    /// client had been handed out (see _failure).</summary>
    public MuxClient GetClient()
    {
        if (_client is { } client)
        {
            return client;
        }

        MuxClient created;
        lock (_lock)
        {
            if (_client is { } made)
            {
                return made;
            }

            // Asked while the services are added: on this thread, an implementation injects the client's proxies (Lock is
            // reentrant); on another, waiting for them could deadlock. Either gets the client being set up.
            if (_pending is { } pending)
            {
                _handedOut = true;
                return pending;
            }

            if (_failure is not null)
            {
                throw new InvalidOperationException(
                    $"The Mux client of AddMuxClient could not be created: {_failure.Message} It had already been handed out " +
                    "(to a service that injects its proxies, or to another thread meanwhile), which keeps it, so it was closed " +
                    "and is not made again; fix the failure and restart.",
                    _failure);
            }

            // Back here on this thread before the client exists: something its options resolve needs the client. Going
            // on would recurse until DI's stack guard moves the recursion to another thread, which then waits forever.
            if (_creating)
            {
                throw new InvalidOperationException(
                    "MuxClient (or one of its proxies) was requested while it is being created: something the client needs " +
                    "before it exists depends on it, such as an interceptor added with AddInterceptor, a logger provider " +
                    "(the client's options take the logger factory), or a service that one depends on. These must not depend " +
                    "on the client or its proxies; one that needs them can take IServiceProvider and resolve them when it is used.");
            }

            _creating = true;
            MuxClientOptions clientOptions;
            try
            {
                clientOptions = provider.GetRequiredService<IOptions<MuxClientOptions>>().Value; // Binding errors surface here.
            }
            finally
            {
                _creating = false;
            }

            if (clientOptions.EndPoint is null && clientOptions.EndPoints.Count == 0 && clientOptions.EndPointResolver is null)
            {
                throw new InvalidOperationException(
                    "MuxClientOptions.EndPoint is not set. Set it in AddMuxClient(o => o.EndPoint = new IPEndPoint(IPAddress.Loopback, 5000)) " +
                    "or with the configuration key Mux:Client:Connect, for example \"127.0.0.1:5000\"; for several instances, " +
                    "set Service (Mux:Client:Service, for example \"mux://users\") or EndPoints.");
            }

            ThrowIfStopped(); // Its options took long enough for the host to stop meanwhile.
            try
            {
                created = MuxClient.Create(clientOptions); // Out-of-range options fail here.
            }
            catch (InvalidOperationException ex) when (MuxConfigurationValues.NameKey(
                ex, provider.GetService<IConfiguration>(), MuxClientConfiguration.SectionName, nameof(MuxClientOptions)) is { } named)
            {
                throw named;
            }

            _pending = created;
        }

        try
        {
            foreach (MuxClientServiceRegistration registration in provider.GetServices<MuxClientServiceRegistration>())
            {
                registration.Add(created, provider);
            }

            // Made after the services, so that DI disposes it before them (see MuxClientCloser).
            provider.GetRequiredService<MuxClientCloser>();
        }
        catch (Exception ex)
        {
            lock (_lock)
            {
                // Handed out, the client is DI's singleton and its proxies' for good: a new
                // one would not be theirs, so the failure stays.
                if (_handedOut)
                {
                    _failure = ex;
                }

                _pending = null;
                _handedOut = false;
            }

            Close(created);
            throw;
        }

        lock (_lock)
        {
            _pending = null;
            _handedOut = false;
            lock (_stopLock)
            {
                if (_stopped)
                {
                    Close(created);
                    throw new ObjectDisposedException(
                        nameof(MuxClient), "The host stopped while the Mux client of AddMuxClient was being created; it has been closed.");
                }

                _client = created;
            }
        }

        return created;
    }

    /// <summary>Marks the client stopped, so that none is made from now on, and returns it if it was made.</summary>
    public MuxClient? Stop()
    {
        lock (_stopLock)
        {
            _stopped = true;
            return _client;
        }
    }

    private void ThrowIfStopped()
    {
        lock (_stopLock)
        {
            if (_stopped)
            {
                throw new ObjectDisposedException(nameof(MuxClient), "The host has stopped the Mux client of AddMuxClient.");
            }
        }
    }

    /// <summary>Where the client connects, for logs and health checks: its server's address, or
    /// the service (or the instances) it spreads its calls over.</summary>
    public static string Describe(MuxClient client, MuxClientOptions options) =>
        (client.RemoteEndPoint ?? options.EndPoint)?.ToString()
        ?? options.EndPointResolver?.ToString()
        ?? (options.EndPoints.Count > 0 ? string.Join(", ", options.EndPoints) : "?");

    /// <summary>Closes the client when the service provider is disposed: proxies resolved without a host take it from here.
    /// <see cref="MuxClientCloser"/> does so first, once the client is made; this stops a client being made as the
    /// provider is disposed.</summary>
    public ValueTask DisposeAsync() => Stop() is { } client ? client.DisposeAsync() : default;

    /// <summary>As <see cref="DisposeAsync"/>, for a provider disposed synchronously: the client
    /// closes in the background (MuxClientCloser has waited for the close of a client made).</summary>
    public void Dispose()
    {
        if (Stop() is { } client)
        {
            Close(client);
        }
    }

    // Its connection may be opening: closing stops that at once; the rest completes in the
    // background, as DI's resolution cannot wait for it.
    private static void Close(MuxClient client) => _ = client.DisposeAsync().AsTask();
}

/// <summary>
/// Closes the client of AddMuxClient when the service provider is disposed, before the services it serves to its server
/// (AddService). DI disposes in the reverse order it made things, and the holder was made before those services; the
/// holder resolves this closer once they are made, so that it is disposed first and the server cannot call them then.
/// </summary>
internal sealed class MuxClientCloser(MuxClientHolder holder) : IAsyncDisposable, IDisposable
{
    public ValueTask DisposeAsync() => holder.DisposeAsync();

    /// <summary>As <see cref="DisposeAsync"/>, waiting for the close, as the services are disposed
    /// next. It is bounded: the connection waits at most a second for the server to close its side.</summary>
    public void Dispose() => holder.DisposeAsync().AsTask().GetAwaiter().GetResult();
}

/// <summary>
/// Starts the shared <see cref="MuxClient"/> of AddMuxClient when the host starts, without waiting for the server (the
/// client connects in the background and logs each change itself), and disposes it when the host stops.
/// </summary>
internal sealed class MuxClientHostedService(
    IOptions<MuxClientOptions> options,
    MuxClientHolder holder,
    ILoggerFactory? loggerFactory = null)
    : IHostedService, IAsyncDisposable
{
    private readonly ILogger _logger = (loggerFactory ?? NullLoggerFactory.Instance).CreateLogger(MuxHostingLog.Category);

    public Task StartAsync(CancellationToken cancellationToken)
    {
        // The host's start was abandoned (it is stopping): do not connect.
        cancellationToken.ThrowIfCancellationRequested();
        holder.GetClient();
        return Task.CompletedTask;
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (holder.Stop() is { } client)
        {
            await client.DisposeAsync().ConfigureAwait(false);
            MuxHostingLog.ClientDisconnected(_logger, MuxClientHolder.Describe(client, options.Value));
        }
    }

    /// <summary>Closes the connection if the host did not stop the client (for example when a
    /// later hosted service failed to start).</summary>
    public async ValueTask DisposeAsync()
    {
        if (holder.Stop() is { } client)
        {
            await client.DisposeAsync().ConfigureAwait(false);
        }
    }
}
