using Mux.Tests.Infrastructure;
using System.Net;

namespace Mux.Tests.Client.Balancing;

/// <summary>Several <see cref="BalanceProbe"/> servers on loopback (port 0), each one killable and
/// restartable on its port.</summary>
public sealed class BalanceCluster : IAsyncDisposable
{
    private readonly MuxServer?[] _servers;

    private BalanceCluster(int count)
    {
        _servers = new MuxServer?[count];
        Probes = new BalanceProbe[count];
        EndPoints = new IPEndPoint[count];
    }

    public BalanceProbe[] Probes { get; }

    public IPEndPoint[] EndPoints { get; }

    public int TotalServed => Probes.Sum(probe => probe.Served);

    public static async Task<BalanceCluster> StartAsync(int count, params TimeSpan[] delays)
    {
        var cluster = new BalanceCluster(count);
        for (int i = 0; i < count; i++)
        {
            await cluster.StartAsync(i, new IPEndPoint(IPAddress.Loopback, 0), i < delays.Length ? delays[i] : TimeSpan.Zero);
        }

        return cluster;
    }

    /// <summary>Fast reconnect, a call timeout the tests never reach, the given instances.</summary>
    public MuxClientOptions ClientOptions()
    {
        var options = new MuxClientOptions
        {
            ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
            ReconnectMaxDelay = TimeSpan.FromMilliseconds(200),
            CallTimeout = TestHost.Patience,
        };
        foreach (IPEndPoint endPoint in EndPoints)
        {
            options.EndPoints.Add(endPoint);
        }

        return options;
    }

    /// <summary>Drops every connection of instance <paramref name="index"/> without draining.</summary>
    public Task KillAsync(int index) => StopAsync(index, new CancellationToken(canceled: true));

    /// <summary>GoAway, then instance <paramref name="index"/> finishes its calls and stops.</summary>
    public Task DrainAsync(int index) => StopAsync(index, new CancellationTokenSource(TestHost.Patience).Token);

    /// <summary>Starts instance <paramref name="index"/> again on its port, with a fresh probe.</summary>
    public Task RestartAsync(int index) => StartAsync(index, EndPoints[index], TimeSpan.Zero);

    private async Task StopAsync(int index, CancellationToken cancellationToken)
    {
        MuxServer server = _servers[index]!;
        _servers[index] = null;
        await server.StopAsync(cancellationToken).WaitAsync(TestHost.Patience);
        await server.DisposeAsync();
    }

    private async Task StartAsync(int index, IPEndPoint endPoint, TimeSpan delay)
    {
        var probe = new BalanceProbe(delay);
        var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
        server.AddService<IBalanceProbe>(probe);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        _servers[index] = server;
        Probes[index] = probe;
        EndPoints[index] = (IPEndPoint)server.LocalEndPoint!;
    }

    public async ValueTask DisposeAsync()
    {
        foreach (MuxServer? server in _servers)
        {
            if (server is not null)
            {
                await server.DisposeAsync();
            }
        }
    }
}
