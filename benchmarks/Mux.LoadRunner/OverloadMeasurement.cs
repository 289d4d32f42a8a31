using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace Mux.LoadRunner;

/// <summary>
/// --overload: how a server with <see cref="MuxServerOptions.MaxConcurrentCalls"/> serves ten times the load it can. A Mux
/// server in this process on 127.0.0.1 with the cap (--overload-cap, default the core count) and a handler that spins about
/// 1 ms of CPU; one client connection with the default retry budget. Phase "capacity": as many closed-loop callers as the cap,
/// so nothing is refused: served calls/s and p99. Phase "overload": calls started at ten times that rate (open loop), whatever
/// the answers: served calls/s and p99 of the served calls against the capacity phase, calls the server refused, the client
/// retried and that failed, and calls that ran twice, counted on the server by a unique id per call (must be 0: the runner
/// exits 1 otherwise).
/// </summary>
internal static class OverloadMeasurement
{
    private static readonly TimeSpan s_drainTimeout = TimeSpan.FromSeconds(60);

    private sealed class Service(long workTicks) : IOverloadService
    {
        // Every call id that ran; one seen again ran twice.
        private readonly ConcurrentDictionary<long, byte> _ran = new();
        private long _ranTwice;

        public long RanTwice => Interlocked.Read(ref _ranTwice);

        public long Ran => _ran.Count;

        public Task<long> Work(long callId)
        {
            if (!_ran.TryAdd(callId, 0))
            {
                Interlocked.Increment(ref _ranTwice);
            }

            // CPU, not a sleep: the cap is about cores, and a sleeping handler would not take one.
            long until = Stopwatch.GetTimestamp() + workTicks;
            while (Stopwatch.GetTimestamp() < until)
            {
                Thread.SpinWait(20);
            }

            return Task.FromResult(callId);
        }
    }

    /// <summary>What one phase saw: served calls and their latency, and the failures by kind.</summary>
    private sealed class Tally
    {
        private readonly Lock _lock = new();
        private readonly LatencyHistogram _latency = new();
        private long _overloaded;
        private long _timedOut;
        private long _other;

        public string? FirstOther { get; private set; }

        public long Served { get { lock (_lock) { return _latency.Count; } } }

        public long Overloaded => Interlocked.Read(ref _overloaded);

        public long TimedOut => Interlocked.Read(ref _timedOut);

        public long Other => Interlocked.Read(ref _other);

        public long Failed => Overloaded + TimedOut + Other;

        public double P99Ms { get { lock (_lock) { return _latency.PercentileMicroseconds(99) / 1000; } } }

        public double P50Ms { get { lock (_lock) { return _latency.PercentileMicroseconds(50) / 1000; } } }

        public void RecordServed(long ticks)
        {
            lock (_lock)
            {
                _latency.Record(ticks);
            }
        }

        public void RecordFailure(Exception ex)
        {
            switch (ex)
            {
                case MuxRemoteException { StatusCode: MuxStatusCode.Overloaded }:
                    Interlocked.Increment(ref _overloaded);
                    break;
                case TimeoutException:
                    Interlocked.Increment(ref _timedOut);
                    break;
                default:
                    if (Interlocked.Increment(ref _other) == 1)
                    {
                        FirstOther = $"{ex.GetType().Name}: {ex.Message}";
                    }

                    break;
            }
        }
    }

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        int cap = options.OverloadCap ?? Environment.ProcessorCount;
        const double WorkMs = 1;
        var service = new Service((long)(WorkMs * Stopwatch.Frequency / 1000));
        var serverOptions = new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), MaxConcurrentCalls = cap };
        await using var server = new MuxServer(serverOptions);
        server.AddService<IOverloadService>(service);
        await server.StartAsync();
        var clientOptions = new MuxClientOptions();
        MuxRetryBudget budget = clientOptions.RetryBudget!;
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, clientOptions);
        IOverloadService proxy = client.CreateProxy<IOverloadService>();
        long nextId = 0;

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"Overload measurement: one Mux server in this process, MaxConcurrentCalls {cap}, a handler that spins {WorkMs} ms of CPU; one client connection, RetryBudget Ratio {budget.Ratio} and MinRetriesPerSecond {budget.MinRetriesPerSecond} (the defaults); window {options.Seconds} s after {options.Warmup} s warm-up per phase; {Environment.ProcessorCount} cores, .NET {Environment.Version}."));

        // Capacity: as many closed-loop callers as the cap, so every call is admitted.
        long refusedBefore = server.CallsRefusedOverloaded;
        Tally capacity = await ClosedLoopAsync(proxy, cap, options, () => Interlocked.Increment(ref nextId));
        double capacityRate = capacity.Served / options.Seconds;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"capacity alone ({cap} closed-loop callers): served {capacityRate:N0} calls/s, p50 {capacity.P50Ms:0.00} ms, p99 {capacity.P99Ms:0.00} ms; refused {server.CallsRefusedOverloaded - refusedBefore}, failed {capacity.Failed}"));
        if (capacity.Served == 0)
        {
            Console.WriteLine("no call was served in the capacity phase: nothing to compare with");
            return 1;
        }

        // Overload: calls started at ten times the capacity, open loop, whatever the answers.
        double offered = 10 * capacityRate;
        refusedBefore = server.CallsRefusedOverloaded;
        long retriedBefore = client.RetriesMade;
        Tally overload = await OpenLoopAsync(proxy, offered, options, () => Interlocked.Increment(ref nextId));
        long refused = server.CallsRefusedOverloaded - refusedBefore;
        long retried = client.RetriesMade - retriedBefore;
        double servedRate = overload.Served / options.Seconds;

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"overload (open loop, {offered:N0} calls/s offered = 10x capacity): served {servedRate:N0} calls/s = {servedRate / capacityRate:0.00}x capacity; p50 {overload.P50Ms:0.00} ms, p99 of served calls {overload.P99Ms:0.00} ms = {overload.P99Ms / capacity.P99Ms:0.0}x the p99 at capacity"));
        Console.WriteLine($"refused by the server: {refused:N0}; retried by the client: {retried:N0}; failed: {overload.Failed:N0} (Overloaded {overload.Overloaded:N0}, timed out {overload.TimedOut:N0}, other {overload.Other:N0}){(overload.FirstOther is null ? "" : $"; first other: {overload.FirstOther}")}");
        Console.WriteLine($"ran twice: {service.RanTwice}");

        // A call that ran twice breaks the promise of Overloaded (never ran); any failure but Overloaded or a timeout is a bug.
        return service.RanTwice == 0 && overload.Other == 0 && capacity.Other == 0 ? 0 : 1;
    }

    private static async Task<Tally> ClosedLoopAsync(IOverloadService proxy, int callers, RunnerOptions options, Func<long> newId)
    {
        var tally = new Tally();
        long warmEnd = Stopwatch.GetTimestamp() + (long)(options.Warmup * Stopwatch.Frequency);
        long end = warmEnd + (long)(options.Seconds * Stopwatch.Frequency);
        await Task.WhenAll(Enumerable.Range(0, callers).Select(_ => Task.Run(async () =>
        {
            while (Stopwatch.GetTimestamp() is var start && start < end)
            {
                await CallAsync(proxy, newId(), start >= warmEnd ? tally : null);
            }
        })));
        return tally;
    }

    private static async Task<Tally> OpenLoopAsync(IOverloadService proxy, double rate, RunnerOptions options, Func<long> newId)
    {
        var tally = new Tally();
        var running = new List<Task>();
        long begin = Stopwatch.GetTimestamp();
        long warmEnd = begin + (long)(options.Warmup * Stopwatch.Frequency);
        long end = warmEnd + (long)(options.Seconds * Stopwatch.Frequency);
        long started = 0;
        while (Stopwatch.GetTimestamp() is var now && now < end)
        {
            // Every millisecond or so, start what the rate owes since the beginning: a late tick catches up.
            long owed = (long)(rate * (now - begin) / Stopwatch.Frequency);
            for (; started < owed; started++)
            {
                Task call = CallAsync(proxy, newId(), now >= warmEnd ? tally : null);
                if (!call.IsCompleted)
                {
                    running.Add(call);
                }
            }

            running.RemoveAll(static t => t.IsCompleted);
            await Task.Delay(1);
        }

        await Task.WhenAll(running).WaitAsync(s_drainTimeout);
        return tally;
    }

    private static async Task CallAsync(IOverloadService proxy, long id, Tally? tally)
    {
        long start = Stopwatch.GetTimestamp();
        try
        {
            long answer = await proxy.Work(id).ConfigureAwait(false);
            if (answer != id)
            {
                throw new InvalidOperationException($"call {id} was answered with {answer}");
            }

            tally?.RecordServed((long)(Stopwatch.GetElapsedTime(start).Ticks));
        }
        catch (Exception ex)
        {
            tally?.RecordFailure(ex);
        }
    }
}
