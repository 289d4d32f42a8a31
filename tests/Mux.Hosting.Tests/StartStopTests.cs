using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;

namespace Mux.Hosting.Tests;

/// <summary>A host stopped while it is still starting, or whose start fails halfway: nothing of
/// Mux's stays listening or connected.</summary>
public sealed class StartStopTests
{
    /// <summary>Holds up the start of whatever resolves a <see cref="SlowInterceptor"/>.</summary>
    public sealed class StartGate
    {
        public TaskCompletionSource Entered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public ManualResetEventSlim Release { get; } = new();
    }

    /// <summary>An interceptor whose construction, while the host starts, waits for the test.</summary>
    public sealed class SlowInterceptor : IMuxServerInterceptor, IMuxClientInterceptor
    {
        public SlowInterceptor(StartGate gate)
        {
            gate.Entered.TrySetResult();
            gate.Release.Wait(TestHost.Patience);
        }

        public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) => next();

        public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => next();
    }

    /// <summary>A client interceptor that cannot be made.</summary>
    public sealed class BrokenInterceptor : IMuxClientInterceptor
    {
        public BrokenInterceptor() => throw new InvalidOperationException("The interceptor's settings are missing.");

        public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => next();
    }

    [Fact]
    public async Task AStartThatFailsAtTheServersPortAfterTheClientStarted_LeavesNothingConnectedOnceTheHostStops()
    {
        await using var other = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        await other.StartAsync().WaitAsync(TestHost.Patience);
        using var taken = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        taken.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        taken.Listen();
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?>
        {
            ["Mux:Client:Connect"] = other.LocalEndPoint!.ToString(),
            ["Mux:Server:Listen"] = taken.LocalEndPoint!.ToString(),
        });
        builder.Services.AddMuxClient().AddProxy<IHostingTestService>(); // Registered first: starts first.
        builder.Services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();
        builder.Services.AddSingleton(new InstanceTracker());
        using IHost host = builder.Build();

        await Assert.ThrowsAsync<SocketException>(() => host.StartAsync().WaitAsync(TestHost.Patience));
        MuxClient client = host.Services.GetRequiredService<MuxClient>();
        await host.StopAsync().WaitAsync(TestHost.Patience);

        Assert.Equal(MuxClientState.Closed, client.State);
        await TestHost.WaitUntilAsync(() => other.ActiveConnections == 0, "the client's connection is closed");
    }

    [Fact]
    public async Task AStartThatFailsAtAClientInterceptorAfterTheServerStarted_FailsWithItsError_AndStopsListeningWithTheHost()
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?>
        {
            ["Mux:Server:Listen"] = "127.0.0.1:0",
            ["Mux:Client:Connect"] = "127.0.0.1:1",
        });
        builder.Services.AddMuxServer().AddService<IHostingTestService, HostingTestService>();
        builder.Services.AddMuxClient().AddInterceptor<BrokenInterceptor>();
        builder.Services.AddSingleton(new InstanceTracker());
        using IHost host = builder.Build();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => host.StartAsync().WaitAsync(TestHost.Patience));
        Assert.Equal("The interceptor's settings are missing.", error.Message);
        MuxServer server = host.Services.GetRequiredService<MuxServer>();
        Assert.True(server.IsListening);
        await host.StopAsync().WaitAsync(TestHost.Patience);

        Assert.False(server.IsListening);

        // No client was made; a later resolve tries again, and fails the same way.
        Assert.Equal("The interceptor's settings are missing.", Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<MuxClient>()).Message);
    }

    [Fact]
    public async Task AServerHostStoppedWhileItStarts_DoesNotListenAfterwards()
    {
        var gate = new StartGate();
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Server:Listen"] = "127.0.0.1:0" });
        builder.Services.AddSingleton(gate);
        builder.Services.AddMuxServer().AddInterceptor<SlowInterceptor>().AddService<IHostingTestService, HostingTestService>();
        builder.Services.AddSingleton(new InstanceTracker());
        using IHost host = builder.Build();

        Task starting = Task.Run(() => host.StartAsync());
        await gate.Entered.Task.WaitAsync(TestHost.Patience);
        await host.StopAsync().WaitAsync(TestHost.Patience);
        gate.Release.Set();

        // The old code went on and listened, after the host had stopped.
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => starting.WaitAsync(TestHost.Patience));
        Assert.Contains("has not started", Assert.Throws<InvalidOperationException>(() => host.Services.GetRequiredService<MuxServer>()).Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TwoStartsOfTheServerAtOnce_StartOneServer_AndTheOtherFails()
    {
        var gate = new StartGate();
        (HostApplicationBuilder builder, LogSink logs) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Server:Listen"] = "127.0.0.1:0" });
        builder.Services.AddSingleton(gate);
        builder.Services.AddMuxServer().AddInterceptor<SlowInterceptor>().AddService<IHostingTestService, HostingTestService>();
        builder.Services.AddSingleton(new InstanceTracker());
        using IHost host = builder.Build();
        IHostedService hosted = host.Services.GetServices<IHostedService>().Single();

        // The first start waits while its options are made; the second starts meanwhile, and
        // finishes or waits for the same options.
        Task<bool> first = TestHost.RunOnOwnThread(() => Started(hosted));
        await gate.Entered.Task.WaitAsync(TestHost.Patience);
        Thread secondThread = null!;
        Task<bool> second = TestHost.RunOnOwnThread(() => Started(hosted), t => secondThread = t);
        await TestHost.WaitUntilAsync(() => second.IsCompleted || (secondThread.ThreadState & ThreadState.WaitSleepJoin) != 0, "the second start finishes or waits");
        gate.Release.Set();

        // One server; the old code started two, on two ports, and kept the second: the first
        // listened on after the host had stopped.
        bool[] started = await Task.WhenAll(first, second).WaitAsync(TestHost.Patience);
        Assert.Equal(1, started.Count(s => s));
        Assert.Single(logs.EventIds("Mux.Hosting"), 100);
        await host.StopAsync().WaitAsync(TestHost.Patience);
    }

    // True if this start started the server; false if it failed because another had.
    private static bool Started(IHostedService hosted)
    {
        try
        {
            hosted.StartAsync(CancellationToken.None).GetAwaiter().GetResult();
            return true;
        }
        catch (InvalidOperationException ex) when (ex.Message.Contains("already been started", StringComparison.Ordinal))
        {
            return false;
        }
    }

    [Fact]
    public async Task AClientHostStoppedWhileItStarts_DoesNotConnectAfterwards()
    {
        await using var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        server.AddService<IHostingTestService>(new HostingTestService(new InstanceTracker()));
        await server.StartAsync().WaitAsync(TestHost.Patience);
        var gate = new StartGate();
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(new Dictionary<string, string?> { ["Mux:Client:Connect"] = server.LocalEndPoint!.ToString() });
        builder.Services.AddSingleton(gate);
        builder.Services.AddMuxClient().AddInterceptor<SlowInterceptor>().AddProxy<IHostingTestService>();
        using IHost host = builder.Build();

        Task starting = Task.Run(() => host.StartAsync());
        await gate.Entered.Task.WaitAsync(TestHost.Patience);
        await host.StopAsync().WaitAsync(TestHost.Patience);
        gate.Release.Set();

        // The old code made the client once the host had stopped, and it connected and stayed.
        var error = await Assert.ThrowsAsync<ObjectDisposedException>(() => starting.WaitAsync(TestHost.Patience));
        Assert.Contains("stopped", error.Message, StringComparison.Ordinal);
        Assert.Throws<ObjectDisposedException>(() => host.Services.GetRequiredService<MuxClient>());
        Assert.Equal(0, server.ActiveConnections);
    }
}
