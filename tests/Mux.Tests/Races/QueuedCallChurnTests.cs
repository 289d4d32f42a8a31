using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// Many callers against a small cap, some of them cancelled at arbitrary moments: a call that
/// finds no slot just as an answer frees one, or is cancelled just as it is let out, is neither
/// lost (it would hang) nor run twice, and the slots add up again at the end.
/// </summary>
public sealed class QueuedCallChurnTests
{
    private const int Cap = 2;
    private const int Callers = 8;
    private const int CallsEach = 150;

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task CallersBeyondTheCap_SomeCancelled_EachCompleteOnce_AndLeakNoSlot(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind, new MuxServerOptions { MaxConcurrentCallsPerConnection = Cap });
        int answered = 0;
        int cancelled = 0;
        Task[] callers = [.. Enumerable.Range(0, Callers).Select(caller => Task.Run(async () =>
        {
            for (int i = 0; i < CallsEach; i++)
            {
                if (i % 3 != 0)
                {
                    Assert.Equal(caller + i, await host.Proxy.Add(caller, i));
                    Interlocked.Increment(ref answered);
                    continue;
                }

                // Cancelled from another thread while it waits, is let out, or is answered.
                using var token = new CancellationTokenSource();
                Task<string> call = host.Proxy.Echo($"{caller}/{i}", token.Token);
                Task cancelling = Task.Run(token.Cancel);
                try
                {
                    Assert.Equal($"{caller}/{i}", await call);
                    Interlocked.Increment(ref answered);
                }
                catch (OperationCanceledException)
                {
                    Interlocked.Increment(ref cancelled);
                }

                await cancelling;
            }
        }))];

        await Task.WhenAll(callers).WaitAsync(TestHost.Patience * 4);
        Assert.Equal(Callers * CallsEach, answered + cancelled);

        // Calls given up on hold their slots until the server's answer to them comes: wait for those.
        await Hosts.WaitUntilAsync(() => host.Client.Connection.Outgoing.SlotAccount == (Cap, 0), "every slot to be free again");
        Assert.Equal(0, host.Client.PendingCalls);
        Assert.Equal(3, await host.Proxy.Add(1, 2).AsTask().WaitAsync(TestHost.Patience));
    }
}
