using System.Collections.Concurrent;
using System.Net;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Mux.Hosting.Tests;

/// <summary>A started generic host for a test, with its <see cref="InstanceTracker"/> and captured
/// logs. Disposing it opens the tracker's gate, stops the host (with a deadline) and disposes it.</summary>
public sealed class TestHost : IAsyncDisposable
{
    /// <summary>How long a test waits for something that should happen promptly before failing.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(15);

    private TestHost(IHost host, InstanceTracker tracker, LogSink logs)
    {
        Host = host;
        Tracker = tracker;
        Logs = logs;
    }

    public IHost Host { get; }

    public IServiceProvider Services => Host.Services;

    public InstanceTracker Tracker { get; }

    public LogSink Logs { get; }

    /// <summary>Where the server of a host made by <see cref="StartServerAsync"/> listens.</summary>
    public IPEndPoint ServerEndPoint => (IPEndPoint)Services.GetRequiredService<MuxServer>().LocalEndPoint!;

    /// <summary>A builder with only in-memory configuration (no appsettings, no environment
    /// variables, no console logging), a captured log and a shutdown timeout of <see cref="Patience"/>.</summary>
    public static (HostApplicationBuilder Builder, LogSink Logs) CreateBuilder(IEnumerable<KeyValuePair<string, string?>>? configuration = null)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true });
        builder.Configuration.AddInMemoryCollection(configuration ?? []);
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = Patience);
        var logs = new LogSink();
        builder.Logging.AddProvider(logs);
        builder.Logging.SetMinimumLevel(LogLevel.Debug);
        return (builder, logs);
    }

    /// <summary>Starts a host that serves <see cref="IHostingTestService"/> on 127.0.0.1, port 0
    /// (from configuration), with the given lifetime.</summary>
    public static Task<TestHost> StartServerAsync(ServiceLifetime lifetime = ServiceLifetime.Scoped, Dictionary<string, string?>? configuration = null, Action<HostApplicationBuilder>? configure = null)
    {
        configuration ??= [];
        configuration.TryAdd("Mux:Server:Listen", "127.0.0.1:0");
        (HostApplicationBuilder builder, LogSink logs) = CreateBuilder(configuration);
        builder.Services.AddMuxServer().AddService<IHostingTestService, HostingTestService>(lifetime);
        configure?.Invoke(builder);
        return StartAsync(builder, logs);
    }

    /// <summary>Starts a host whose <see cref="IHostingTestService"/> is a proxy to <paramref name="server"/>,
    /// and waits until its client has connected unless <paramref name="waitForConnection"/> is false
    /// (the host itself starts without waiting for the server).</summary>
    public static async Task<TestHost> StartClientAsync(IPEndPoint server, Dictionary<string, string?>? configuration = null, Action<HostApplicationBuilder>? configure = null, bool waitForConnection = true)
    {
        configuration ??= [];
        configuration.TryAdd("Mux:Client:Connect", server.ToString());
        (HostApplicationBuilder builder, LogSink logs) = CreateBuilder(configuration);
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>();
        configure?.Invoke(builder);
        TestHost host = await StartAsync(builder, logs);
        if (waitForConnection)
        {
            MuxClient client = host.Services.GetRequiredService<MuxClient>();
            await WaitUntilAsync(() => client.State == MuxClientState.Connected, "the client connects");
        }

        return host;
    }

    public static async Task<TestHost> StartAsync(HostApplicationBuilder builder, LogSink logs)
    {
        var tracker = new InstanceTracker();
        builder.Services.AddSingleton(tracker);
        IHost host = builder.Build();
        try
        {
            await host.StartAsync().WaitAsync(Patience);
        }
        catch
        {
            await DisposeHostAsync(host);
            throw;
        }

        return new TestHost(host, tracker, logs);
    }

    /// <summary>Stops the host with a deadline of <see cref="Patience"/>.</summary>
    public Task StopAsync() => Host.StopAsync(new CancellationTokenSource(Patience).Token).WaitAsync(Patience);

    public async ValueTask DisposeAsync()
    {
        Tracker.Gate.TrySetResult();
        await StopAsync();
        await DisposeHostAsync(Host);
    }

    public static async ValueTask DisposeHostAsync(IHost host)
    {
        if (host is IAsyncDisposable asyncDisposable)
        {
            await asyncDisposable.DisposeAsync().AsTask().WaitAsync(Patience);
        }
        else
        {
            host.Dispose();
        }
    }

    /// <summary>Runs <paramref name="work"/> on a thread of its own (a background one, so that a
    /// deadlocked test cannot keep the test run alive).</summary>
    public static Task<T> RunOnOwnThread<T>(Func<T> work, Action<Thread>? started = null)
    {
        var result = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
        var thread = new Thread(() =>
        {
            try
            {
                result.SetResult(work());
            }
            catch (Exception ex)
            {
                result.SetException(ex);
            }
        })
        { IsBackground = true };
        started?.Invoke(thread);
        thread.Start();
        return result.Task;
    }

    /// <summary>Waits until <paramref name="condition"/> holds, failing the test after <see cref="Patience"/>.</summary>
    public static async Task WaitUntilAsync(Func<bool> condition, string what)
    {
        DateTime deadline = DateTime.UtcNow + Patience;
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, $"Timed out waiting until {what}.");
            await Task.Delay(10);
        }
    }
}

/// <summary>Captures every log entry of a host.</summary>
public sealed class LogSink : ILoggerProvider
{
    public ConcurrentQueue<(string Category, LogLevel Level, EventId EventId, string Message)> Entries { get; } = new();

    public IEnumerable<int> EventIds(string category) =>
        Entries.Where(e => e.Category == category).Select(e => e.EventId.Id);

    public ILogger CreateLogger(string categoryName) => new Logger(this, categoryName);

    public void Dispose()
    {
    }

    private sealed class Logger(LogSink sink, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            sink.Entries.Enqueue((category, logLevel, eventId, formatter(state, exception)));
    }
}
