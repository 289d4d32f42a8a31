using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// The server reuses the object of a finished call for later requests and finds running calls by
/// the slot their id maps to (16 slots for a cap of 8 calls). These tests make calls share slots
/// and objects, and check that each call still gets its own arguments, result and cancellation.
/// </summary>
public sealed class ServerCallReuseTests
{
    [Fact]
    public async Task CallsWhoseIdsShareASlotWithRunningCalls_AreServedAndCancelledEachOnItsOwn()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = 8 });

        // Four calls keep their slots taken for the whole test.
        Task<int>[] hanging = [.. Enumerable.Range(1, 4).Select(host.Proxy.Hang)];
        while (host.Service.HangingCalls < 4)
        {
            await host.Proxy.Add(0, 0).AsTask().WaitAsync(TestHost.Patience);
        }

        // 44 calls run past every slot, several times over the held ones (with ids in sequence,
        // the one after them lands on the first hanging call's slot).
        for (int i = 0; i < 44; i++)
        {
            Assert.Equal(i + 1000, await host.Proxy.Add(i, 1000).AsTask().WaitAsync(TestHost.Patience));
        }

        using var cancellation = new CancellationTokenSource();
        Task waiting = host.Proxy.WaitForCancellation(cancellation.Token);
        await host.Service.WaitStarted.Task.WaitAsync(TestHost.Patience);
        await cancellation.CancelAsync();

        await host.Service.CancellationObserved.Task.WaitAsync(TestHost.Patience);
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting.WaitAsync(TestHost.Patience));
        Assert.Equal(4, host.Service.HangingCalls);

        host.Service.ReleaseHangingCalls();
        int[] results = await Task.WhenAll(hanging).WaitAsync(TestHost.Patience);
        Assert.Equal(new[] { 1, 2, 3, 4 }, results);
    }

    [Fact]
    public async Task AReusedCall_ReadsOnlyItsOwnArguments_SmallOrLarge()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = 2 });

        // Alternating sizes below and above what a call keeps its own buffer for (1 KiB), so the
        // same few call objects switch between their own buffer and a rented one.
        for (int i = 0; i < 40; i++)
        {
            string text = new((char)('a' + (i % 26)), i % 2 == 0 ? 3 + i : 3000 + i);
            Assert.Equal(text, await host.Proxy.Echo(text).WaitAsync(TestHost.Patience));
        }

        Task<string>[] concurrent = [.. Enumerable.Range(0, 200).Select(i => host.Proxy.Echo(new string('z', i * 13)))];
        string[] echoed = await Task.WhenAll(concurrent).WaitAsync(TestHost.Patience);
        for (int i = 0; i < echoed.Length; i++)
        {
            Assert.Equal(i * 13, echoed[i].Length);
        }

        Assert.Equal(0, host.Client.PendingCalls);
    }

    [Fact]
    public async Task HandlersThatCompleteLater_OnReusedCalls_AnswerEachCallOnce_WithItsOwnResultOrCancellation()
    {
        await using TestHost host = await TestHost.StartInMemoryAsync(new MuxServerOptions { MaxConcurrentCallsPerConnection = 2 });

        // Each handler awaits before it answers, so the call finishes through its continuation on
        // another thread; every third one ends by its token instead.
        for (int i = 0; i < 30; i++)
        {
            if (i % 3 == 2)
            {
                using var cancellation = new CancellationTokenSource();
                Task<int> held = host.RaceProxy.Respond(i, -1, cancellation.Token);
                while (host.Race.RespondRunning == 0)
                {
                    await host.Proxy.Add(0, 0).AsTask().WaitAsync(TestHost.Patience);
                }

                await cancellation.CancelAsync();
                await Assert.ThrowsAnyAsync<OperationCanceledException>(() => held.WaitAsync(TestHost.Patience));
            }
            else
            {
                Assert.Equal(i, await host.RaceProxy.Respond(i, 1).WaitAsync(TestHost.Patience));
            }
        }

        Task<int>[] concurrent = [.. Enumerable.Range(100, 50).Select(id => host.RaceProxy.Respond(id, 1))];
        Assert.Equal(Enumerable.Range(100, 50), await Task.WhenAll(concurrent).WaitAsync(TestHost.Patience));
        Assert.Equal(10, host.Race.RespondCanceled);
        Assert.Equal(0, host.Client.PendingCalls);
    }

    [Fact]
    public async Task AReusedCall_GivesEachRequestAFreshToken_AndDropsRegistrationsAnEarlierHandlerLeftOnIt()
    {
        var service = new TokenRecordingService();
        var server = new MuxServer(new MuxServerOptions { MaxConcurrentCallsPerConnection = 1 });
        server.AddService<ITokenRecordingService>(service);
        MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        ITokenRecordingService proxy = client.CreateProxy<ITokenRecordingService>();
        try
        {
            // One call at a time: the server serves them all with the one or two call objects it
            // has, cancelling every other request, so each Remember runs on an object that served a
            // cancelled request or a Remember before it, whose handler left a registration behind.
            for (int i = 0; i < 20; i++)
            {
                Assert.False(await proxy.Remember(i).WaitAsync(TestHost.Patience), $"Remember({i}) got a cancelled token.");

                using var cancellation = new CancellationTokenSource();
                Task waiting = proxy.WaitForCancel(cancellation.Token);
                Assert.True(await service.WaitForWaiterAsync(TestHost.Patience), "WaitForCancel never started.");
                await cancellation.CancelAsync();
                await Assert.ThrowsAnyAsync<OperationCanceledException>(() => waiting.WaitAsync(TestHost.Patience));
            }

            Assert.Empty(service.CancelledAfterwards);
        }
        finally
        {
            await client.DisposeAsync();
            using var deadline = new CancellationTokenSource(TestHost.Patience);
            await server.StopAsync(deadline.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }
    }
}
