using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// A call given up on while its answer arrives leaks no call slot. The caller's side moves the call
/// from its table to the set of abandoned calls (whose slots stay taken until the server answers),
/// while the reader loop takes the answer; if the reader could look between the two, it found the
/// call in neither, freed nothing, and the id stayed abandoned for good: one slot of the server's
/// cap lost each time, until no call could be sent.
/// </summary>
public sealed class CancelRacingAnswerTests
{
    private const int Cap = 8;
    private const int Rounds = 400;

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task CallsCancelledAsTheirAnswersArrive_EachEndOnce_AndEverySlotComesBack(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind, new MuxServerOptions { MaxConcurrentCallsPerConnection = Cap });
        var random = new Random(23);
        int answered = 0, cancelled = 0;
        for (int round = 0; round < Rounds; round++)
        {
            var callers = new CancellationTokenSource[Cap];
            var calls = new Task<string>[Cap];
            for (int i = 0; i < Cap; i++)
            {
                callers[i] = new CancellationTokenSource();
                calls[i] = host.Proxy.Echo($"{round}.{i}", callers[i].Token);
            }

            // Each caller gives up after a different short spin, so some give up before their answer,
            // some after it, and some while the reader is taking it.
            foreach (CancellationTokenSource caller in callers)
            {
                Thread.SpinWait(random.Next(0, 4000));
                caller.Cancel();
            }

            for (int i = 0; i < Cap; i++)
            {
                try
                {
                    Assert.Equal($"{round}.{i}", await calls[i].WaitAsync(TestHost.Patience));
                    answered++;
                }
                catch (OperationCanceledException error) when (error.CancellationToken == callers[i].Token)
                {
                    cancelled++;
                }

                callers[i].Dispose();
            }
        }

        Assert.Equal(Rounds * Cap, answered + cancelled);

        // Every abandoned call's answer (or its Error for the Cancel) comes; then all the slots are free.
        OutgoingCalls outgoing = host.Client.Connection.Outgoing;
        DateTime deadline = DateTime.UtcNow + TestHost.Patience;
        while (outgoing.SlotAccount != (Cap, 0) && DateTime.UtcNow < deadline)
        {
            await Task.Delay(10);
        }

        Assert.Equal((Cap, 0), outgoing.SlotAccount);
        Assert.Equal(42, await host.Proxy.Add(40, 2).AsTask().WaitAsync(TestHost.Patience));
    }
}
