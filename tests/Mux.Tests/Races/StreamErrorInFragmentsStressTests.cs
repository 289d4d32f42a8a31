using System.Diagnostics;
using System.Globalization;
using System.Net;
using Mux.Tests.Infrastructure;
using Mux.Tests.Streaming;
using Xunit.Abstractions;

namespace Mux.Tests.Races;

/// <summary>
/// Eight consumers read, over and over, a stream of five items that ends in an error long enough
/// for three 1 KiB fragments, on one loopback connection, with nothing held: every stream delivers
/// its five items, then its error, and the connection never breaks. The writer takes the queued
/// frames and then starts a message in fragments as two steps; an item the handler queued between
/// them, just before its error, was written after the error's first fragment (about one stream in
/// eight thousand), and the receiver closed the connection as a broken sequence. Runs a few
/// seconds; MUX_STREAM_ERROR_STRESS_SECONDS makes it run longer (40 for the full check).
/// </summary>
[Collection(SerialCollection.Name)]
public sealed class StreamErrorInFragmentsStressTests(ITestOutputHelper output)
{
    private const int Consumers = 8;
    private const int Items = 5;
    private const int MessageLength = 3_000;
    private const int DefaultSeconds = 3;

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ConcurrentStreamsEndingInAnErrorInFragments_EachDeliverEveryItemThenTheError(bool clientServes)
    {
        string? configured = Environment.GetEnvironmentVariable("MUX_STREAM_ERROR_STRESS_SECONDS");
        TimeSpan duration = TimeSpan.FromSeconds(configured is null ? DefaultSeconds : int.Parse(configured, CultureInfo.InvariantCulture));
        using var unobserved = new UnobservedExceptions();
        var service = new FailingStreams { YieldsPerItem = true };
        var server = new MuxServer(new MuxServerOptions { FragmentSize = 1024, EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
        if (!clientServes)
        {
            server.AddService<IFailingStreams>(service);
        }

        await server.StartAsync().WaitAsync(TestHost.Patience);
        MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { FragmentSize = 1024, AutoReconnect = false }).WaitAsync(TestHost.Patience);
        if (clientServes)
        {
            client.AddService<IFailingStreams>(service);
        }

        IFailingStreams proxy = clientServes
            ? server.Connections.Single().RemoteClient.CreateProxy<IFailingStreams>()
            : client.CreateProxy<IFailingStreams>();
        string expected = FailingStreams.Message(MessageLength);
        long whole = 0;
        Exception? broken = null;
        var clock = Stopwatch.StartNew();

        async Task ConsumeAsync()
        {
            var items = new List<int>(Items);
            while (clock.Elapsed < duration && Volatile.Read(ref broken) is null)
            {
                items.Clear();
                try
                {
                    await foreach (int item in proxy.ItemsThenFailure(Items, MessageLength))
                    {
                        items.Add(item);
                    }

                    Interlocked.CompareExchange(ref broken, new InvalidOperationException($"A stream ended without its error, after items [{string.Join(", ", items)}]."), null);
                }
                catch (MuxRemoteException error) when (error.Message == expected && items.SequenceEqual(Enumerable.Range(0, Items)))
                {
                    Interlocked.Increment(ref whole);
                }
                catch (Exception ex)
                {
                    Interlocked.CompareExchange(ref broken, new InvalidOperationException($"A stream ended after items [{string.Join(", ", items)}] with {ex.GetType().Name}.", ex), null);
                }
            }
        }

        try
        {
            Task[] consumers = [.. Enumerable.Range(0, Consumers).Select(_ => Task.Run(ConsumeAsync))];
            await Task.WhenAll(consumers).WaitAsync(duration + TestHost.Patience);
        }
        finally
        {
            await client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            using var stop = new CancellationTokenSource(TestHost.Patience);
            await server.StopAsync(stop.Token).WaitAsync(TestHost.Patience + TestHost.Patience);
        }

        string tally = $"{whole} whole streams in {clock.Elapsed.TotalSeconds:F0} s ({(clientServes ? "the client serving" : "the server serving")}), {(broken is null ? 0 : 1)} broken";
        output.WriteLine(tally);
        Assert.True(broken is null, $"{tally}: {broken}");
        Assert.True(whole > 0, tally);
        unobserved.AssertNone();
    }
}
