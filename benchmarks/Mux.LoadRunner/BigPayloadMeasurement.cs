using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace Mux.LoadRunner;

/// <summary>
/// Small-call latency while one large message is sent on the same connection (issue 10, head-of-line
/// blocking): a Mux server in this process on 127.0.0.1, one client connection, N callers
/// of Add, each pausing --pause-ms after every call (so that latency shows queueing, not a
/// saturated CPU). Phase "idle": only the small callers. Phase "transfer": the same callers while
/// one more caller uploads (--big-download: downloads) --big-payload-mib MiB back to back. Both sides allow 32 MiB frames so
/// that a build without fragments can send a 16 MiB message in one frame (the "before" of the
/// comparison, measured with this file as of d80d739 on 70e7b50, before MaxMessageSize existed);
/// MaxMessageSize is raised for payloads over its 64 MiB default.
/// </summary>
internal static class BigPayloadMeasurement
{
    private sealed class Service(byte[] payload) : IBigPayloadService
    {
        public ValueTask<int> Add(int a, int b) => ValueTask.FromResult(a + b);

        public Task<int> Upload(byte[] data) => Task.FromResult(data.Length);

        public Task<byte[]> Download() => Task.FromResult(payload);
    }

    private sealed record Phase(string Name, LatencyHistogram Latency, double Seconds, int Uploads, double OtherCores, int FullCollections, double GcPauseMs);

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        int mebibytes = options.BigPayloadMib!.Value;
        int callers = options.Callers.Count == 1 ? options.Callers[0] : 100;
        const int FrameSize = 32 * 1024 * 1024;
        // A message larger than the default MaxMessageSize (64 MiB) needs both sides to allow it.
        int messageSize = Math.Max(64 * 1024 * 1024, (mebibytes + 1) * 1024 * 1024);
        var serverOptions = new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), MaxFrameSize = FrameSize, MaxMessageSize = messageSize };
        byte[] payload = new byte[mebibytes * 1024 * 1024];
        Random.Shared.NextBytes(payload);
        await using var server = new MuxServer(serverOptions);
        server.AddService<IBigPayloadService>(new Service(payload));
        await server.StartAsync();
        await using MuxClient client = await MuxClient.ConnectAsync(server.LocalEndPoint!, new MuxClientOptions { MaxFrameSize = FrameSize, MaxMessageSize = messageSize, CallTimeout = TimeSpan.FromMinutes(5) });
        IBigPayloadService proxy = client.CreateProxy<IBigPayloadService>();
        string transfer = options.BigDownload ? "download" : "upload";
        using LargeObjectSampler? sampler = options.LohEvents ? new LargeObjectSampler() : null;

        string window = options.BigTransfers is { } count ? $"window {options.Seconds} s idle and exactly {count} {transfer}s during" : $"window {options.Seconds} s";
        Console.WriteLine($"Large-payload measurement: {callers} callers of Add (each pausing {options.PauseMs} ms after every call) on one connection, with and without one caller that {transfer}s {mebibytes} MiB back to back; {window}, after {options.Warmup} s warm-up per phase; {Environment.ProcessorCount} cores, .NET {Environment.Version}.");
        var phases = new List<Phase>
        {
            await MeasureAsync("idle", proxy, callers, null, options, sampler),
            await MeasureAsync($"during {mebibytes} MiB {transfer}s", proxy, callers, payload, options, sampler),
            await MeasureAsync("idle (again)", proxy, callers, null, options, sampler),
        };

        Console.WriteLine();
        Console.WriteLine($"| phase | small calls | calls/s | p50 µs | p99 µs | max µs | {transfer}s | {transfer} MB/s | gen2 GCs | GC pause ms | other |");
        Console.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        foreach (Phase phase in phases)
        {
            double mbPerSecond = phase.Uploads * (double)payload.Length / phase.Seconds / 1e6;
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"| {phase.Name} | {phase.Latency.Count:N0} | {phase.Latency.Count / phase.Seconds:N0} | {phase.Latency.PercentileMicroseconds(50):N0} | {phase.Latency.PercentileMicroseconds(99):N0} | {phase.Latency.MaxTicks / 10.0:N0} | {phase.Uploads} | {mbPerSecond:N0} | {phase.FullCollections} | {phase.GcPauseMs:N1} | {phase.OtherCores:N2} |"));
        }

        double idleP99 = phases[0].Latency.PercentileMicroseconds(99);
        double busyP99 = phases[1].Latency.PercentileMicroseconds(99);
        double goal = (2 * idleP99) + 1000;
        Console.WriteLine();
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"Goal (issue 10): p99 during the transfer <= 2 x idle p99 + 1 ms = {goal:N0} µs; measured {busyP99:N0} µs: {(busyP99 <= goal ? "met" : "NOT met")}."));
        if (options.BigTransfers is { } transfers)
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"Full collections during {transfers} x {mebibytes} MiB {transfer}s: {phases[1].FullCollections} (GC pauses {phases[1].GcPauseMs:N1} ms in {phases[1].Seconds:N1} s)."));
        }

        return 0;
    }

    private static async Task<Phase> MeasureAsync(string name, IBigPayloadService proxy, int callers, byte[]? payload, RunnerOptions options, LargeObjectSampler? sampler)
    {
        using var stop = new CancellationTokenSource();
        bool measuring = false;
        var histograms = new LatencyHistogram[callers];
        int uploads = 0;
        Task[] small = new Task[callers];
        for (int i = 0; i < callers; i++)
        {
            var histogram = histograms[i] = new LatencyHistogram();
            int caller = i;
            small[i] = Task.Run(async () =>
            {
                for (int n = 0; !stop.IsCancellationRequested; n++)
                {
                    long start = Stopwatch.GetTimestamp();
                    int sum = await proxy.Add(caller, n).ConfigureAwait(false);
                    long ticks = Stopwatch.GetElapsedTime(start).Ticks;
                    if (sum != caller + n)
                    {
                        throw new InvalidOperationException($"Add({caller}, {n}) returned {sum}.");
                    }

                    if (Volatile.Read(ref measuring))
                    {
                        histogram.Record(ticks);
                    }

                    if (options.PauseMs > 0)
                    {
                        await Task.Delay(options.PauseMs).ConfigureAwait(false);
                    }
                }
            });
        }

        // With --big-transfers N, the window of a transfer phase is exactly N whole transfers: the
        // transfer loop itself opens it before one transfer and closes it after the Nth, reading the
        // collection counters at those two points.
        int? counted = payload is null ? null : options.BigTransfers;
        var windowOpen = new TaskCompletionSource<WindowMark>(TaskCreationOptions.RunContinuationsAsynchronously);
        var windowClosed = new TaskCompletionSource<WindowMark>(TaskCreationOptions.RunContinuationsAsynchronously);
        bool openRequested = false;
        Task upload = payload is null ? Task.CompletedTask : Task.Run(async () =>
        {
            bool open = false;
            while (!stop.IsCancellationRequested)
            {
                if (counted is not null && !open && Volatile.Read(ref openRequested))
                {
                    open = true;
                    windowOpen.SetResult(WindowMark.Take());
                    Volatile.Write(ref measuring, true);
                }

                int length = options.BigDownload ? (await proxy.Download().ConfigureAwait(false)).Length : await proxy.Upload(payload).ConfigureAwait(false);
                if (length != payload.Length)
                {
                    throw new InvalidOperationException($"{length} of {payload.Length} bytes arrived.");
                }

                if (Volatile.Read(ref measuring) && Interlocked.Increment(ref uploads) == counted)
                {
                    Volatile.Write(ref measuring, false);
                    windowClosed.SetResult(WindowMark.Take());
                }
            }
        });

        await Task.Delay(TimeSpan.FromSeconds(options.Warmup));
        using Process self = Process.GetCurrentProcess();
        MachineCpu? machineStart = MachineCpu.Take();
        TimeSpan cpuStart = self.TotalProcessorTime;
        // Client and server share this process, so its collections pause both sides of every call.
        WindowMark first;
        WindowMark last;
        if (counted is not null)
        {
            Volatile.Write(ref openRequested, true);
            first = await windowOpen.Task;
            last = await windowClosed.Task;
        }
        else
        {
            first = WindowMark.Take();
            Volatile.Write(ref measuring, true);
            await Task.Delay(TimeSpan.FromSeconds(options.Seconds));
            Volatile.Write(ref measuring, false);
            last = WindowMark.Take();
        }

        double seconds = Stopwatch.GetElapsedTime(first.Timestamp, last.Timestamp).TotalSeconds;
        self.Refresh();
        TimeSpan cpu = self.TotalProcessorTime - cpuStart;
        int fullCollections = last.FullCollections - first.FullCollections;
        double pauseMs = (last.Pause - first.Pause).TotalMilliseconds;
        MachineCpu? machineStop = MachineCpu.Take();
        stop.Cancel();
        await Task.WhenAll(small.Append(upload));

        double other = machineStart is { } a && machineStop is { } b
            ? Math.Round(Math.Max(0, (b.Busy - a.Busy - cpu).TotalSeconds) / seconds, 2)
            : double.NaN;
        var merged = new LatencyHistogram();
        foreach (LatencyHistogram histogram in histograms)
        {
            merged.Merge(histogram);
        }

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"  {name}: {merged.Count:N0} small calls, p50 {merged.PercentileMicroseconds(50):N0} µs, p99 {merged.PercentileMicroseconds(99):N0} µs, transfers {uploads}, {fullCollections} gen2 GCs in {seconds:N1} s, other {other:N2} cores"));
        if (sampler is not null)
        {
            // The listener hears of allocations a little late: let the window's last events arrive.
            await Task.Delay(500);
            IReadOnlyList<string> large = sampler.Describe(first.UtcNow, last.UtcNow);
            Console.WriteLine($"    arrays on the large object heap in the window: {(large.Count == 0 ? "none" : string.Join(", ", large))}");
            IReadOnlyList<string> full = sampler.DescribeFullCollections(first.UtcNow, last.UtcNow);
            Console.WriteLine($"    full collections in the window, by reason: {(full.Count == 0 ? "none" : string.Join(", ", full))}");
        }

        return new Phase(name, merged, seconds, uploads, other, fullCollections, pauseMs);
    }

    /// <summary>The clocks and collection counters at one edge of a window.</summary>
    private readonly record struct WindowMark(long Timestamp, DateTime UtcNow, int FullCollections, TimeSpan Pause)
    {
        public static WindowMark Take() => new(Stopwatch.GetTimestamp(), DateTime.UtcNow, GC.CollectionCount(2), GC.GetTotalPauseDuration());
    }
}
