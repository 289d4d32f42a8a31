using Mux.Tests.Infrastructure;
using System.Net;

namespace Mux.Tests.Client.Balancing;

/// <summary>Several <see cref="BalanceProbe"/> servers on loopback (port 0), each one killable and
/// restartable on its port.</summary>
public sealed class BalanceCluster : IAsyncDisposable
{
    private readonly MuxServer?[] _servers;

    // Every probe ever started, killed instances' included, in start order. Touched by the test's thread only.
    private readonly List<BalanceProbe> _allProbes = [];

    private BalanceCluster(int count)
    {
        _servers = new MuxServer?[count];
        Probes = new BalanceProbe[count];
        EndPoints = new IPEndPoint[count];
    }

    public BalanceProbe[] Probes { get; }

    public IPEndPoint[] EndPoints { get; }

    public int TotalServed => Probes.Sum(probe => probe.Served);

    /// <summary>The number of connections instance <paramref name="index"/> has open; 0 once it is stopped.</summary>
    public int ActiveConnections(int index) => _servers[index]?.ActiveConnections ?? 0;

    /// <summary>
    /// Fails unless no call ran twice on the instances (killed and restarted ones included) and
    /// every call <paramref name="load"/> saw succeed ran exactly once: each call's value is its own,
    /// so a call run again elsewhere, or a success no instance ran, shows by its value.
    /// </summary>
    public void AssertNoCallRanTwice_AndEverySuccessRanOnce(CallerLoad load)
    {
        var runs = new Dictionary<int, int>();
        foreach (BalanceProbe probe in _allProbes)
        {
            foreach ((int value, int count) in probe.Runs)
            {
                runs[value] = runs.GetValueOrDefault(value) + count;
            }
        }

        int[] ranTwice = [.. runs.Where(run => run.Value > 1).Select(run => run.Key).Order()];
        Assert.True(ranTwice.Length == 0, $"{ranTwice.Length} calls ran more than once on the instances, e.g. value {ranTwice.FirstOrDefault()}.");
        int[] neverRan = [.. load.SucceededValues.Where(value => !runs.ContainsKey(value)).Order()];
        Assert.True(neverRan.Length == 0, $"{neverRan.Length} calls succeeded that no instance ran, e.g. value {neverRan.FirstOrDefault()}.");
    }

    public static async Task<BalanceCluster> StartAsync(int count)
    {
        var cluster = new BalanceCluster(count);
        for (int i = 0; i < count; i++)
        {
            await cluster.StartAsync(i, new IPEndPoint(IPAddress.Loopback, 0));
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
    public Task RestartAsync(int index) => StartAsync(index, EndPoints[index]);

    private async Task StopAsync(int index, CancellationToken cancellationToken)
    {
        MuxServer server = _servers[index]!;
        _servers[index] = null;
        await server.StopAsync(cancellationToken).WaitAsync(TestHost.Patience);
        await server.DisposeAsync();
    }

    private async Task StartAsync(int index, IPEndPoint endPoint)
    {
        var probe = new BalanceProbe();
        var server = new MuxServer(new MuxServerOptions { EndPoint = endPoint });
        server.AddService<IBalanceProbe>(probe);
        await server.StartAsync().WaitAsync(TestHost.Patience);
        _servers[index] = server;
        Probes[index] = probe;
        _allProbes.Add(probe);
        EndPoints[index] = (IPEndPoint)server.LocalEndPoint!;
    }

    public async ValueTask DisposeAsync()
    {
        // Held calls return first, so that no server's stop waits for one.
        foreach (BalanceProbe probe in _allProbes)
        {
            probe.ReleaseHeldCalls();
        }

        foreach (MuxServer? server in _servers)
        {
            if (server is not null)
            {
                await server.DisposeAsync();
            }
        }
    }
}
