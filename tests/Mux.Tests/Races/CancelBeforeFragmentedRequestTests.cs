using Mux.Server;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>The contract of <see cref="CancelBeforeFragmentedRequestTests"/>: a call with a large
/// argument (sent in fragments) whose handler waits for its token.</summary>
[MuxService]
public interface ILargeArgumentService
{
    /// <summary>Waits until its token is cancelled (then fails as cancelled).</summary>
    Task<int> WaitWith(string text, CancellationToken cancellationToken = default);
}

/// <summary>
/// A call with a Request in fragments, cancelled before the writer has sent any fragment of it,
/// still ends on both sides. Its Request is still sent (the peer must see it to answer it: the
/// caller's side keeps the call's slot until then), and its Cancel must come after its first
/// fragment: a writer that sent the whole frames queued before the next fragment put the Cancel
/// first, the peer dropped it (no such call yet), then ran the Request with a token nothing would
/// cancel. Its handler ran for good, and the call's slot stayed taken on both sides: one of the cap
/// lost each time.
/// </summary>
public sealed class CancelBeforeFragmentedRequestTests
{
    private const int Cap = 8;
    private const int Rounds = 40;
    private const int CallsPerRound = 4;

    // Four 64 KiB fragments.
    private static readonly string s_large = new('x', 200_000);

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task CallsCancelledAsTheirFragmentedRequestsAreQueued_EndOnBothSides_AndEverySlotComesBack(TransportKind kind)
    {
        var service = new LargeArgumentService();
        var options = new MuxServerOptions { MaxConcurrentCallsPerConnection = Cap };
        if (kind == TransportKind.Tcp)
        {
            options.EndPoint = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0);
        }

        await using var server = new MuxServer(options);
        server.AddService<ILargeArgumentService>(service);
        MuxClient client;
        if (kind == TransportKind.Tcp)
        {
            await server.StartAsync().WaitAsync(TestHost.Patience);
            client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { AutoReconnect = false }).WaitAsync(TestHost.Patience);
        }
        else
        {
            client = await server.ConnectInMemoryAsync(new MuxClientOptions { AutoReconnect = false }).WaitAsync(TestHost.Patience);
        }

        await using (client)
        {
            ILargeArgumentService proxy = client.CreateProxy<ILargeArgumentService>();
            ServerConnection served = server.Connections.Single();
            for (int round = 0; round < Rounds; round++)
            {
                var callers = new CancellationTokenSource[CallsPerRound];
                var calls = new Task<int>[CallsPerRound];
                for (int i = 0; i < CallsPerRound; i++)
                {
                    callers[i] = new CancellationTokenSource();
                    calls[i] = proxy.WaitWith(s_large, callers[i].Token);
                }

                // Given up on at once: the writer may not have sent a fragment of the Request yet.
                foreach (CancellationTokenSource caller in callers)
                {
                    caller.Cancel();
                }

                for (int i = 0; i < CallsPerRound; i++)
                {
                    OperationCanceledException error = await Assert.ThrowsAnyAsync<OperationCanceledException>(() => calls[i].WaitAsync(TestHost.Patience));
                    Assert.Equal(callers[i].Token, error.CancellationToken);
                    callers[i].Dispose();
                }

                // Every handler that started is cancelled, and every call's answer frees its slot.
                await Hosts.WaitUntilAsync(() => service.Running == 0 && served.Incoming.Count == 0, $"every handler of round {round} to end");
                await Hosts.WaitUntilAsync(() => client.Connection.Outgoing.SlotAccount == (Cap, 0), $"every slot of round {round} to come back");
            }
        }
    }

    private sealed class LargeArgumentService : ILargeArgumentService
    {
        private int _running;

        public int Running => Volatile.Read(ref _running);

        public async Task<int> WaitWith(string text, CancellationToken cancellationToken = default)
        {
            Interlocked.Increment(ref _running);
            try
            {
                await Task.Delay(Timeout.Infinite, cancellationToken);
                return text.Length;
            }
            finally
            {
                Interlocked.Decrement(ref _running);
            }
        }
    }
}
