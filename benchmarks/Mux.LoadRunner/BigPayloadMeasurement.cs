using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace Mux.LoadRunner;

/// <summary>
/// Small-call latency while large messages are sent on the same connection (head-of-line blocking): a Mux server on
/// 127.0.0.1, in this process or (--big-server-process) in a child process, one client connection, N callers of Add,
/// each pausing --pause-ms after every call (so that latency shows queueing, not a saturated CPU). Phase "idle": only the
/// small callers. Phase "transfer": the same callers while one more caller uploads (--big-download: downloads)
/// --big-payload-mib MiB back to back. Each phase reports the bytes Mux's own code copied per payload byte on the sending
/// and the receiving side (Mux.Diagnostics.PayloadCopies, read in each process at the window's edges) and the full
/// collections per 100 transfers. Both sides allow 32 MiB frames so that a build without fragments can send a 16 MiB
/// message in one frame (the "before" of an older comparison); MaxMessageSize is raised for payloads over its 64 MiB
/// default.
/// </summary>
internal static class BigPayloadMeasurement
{
    public const int FrameSize = 32 * 1024 * 1024;

    private static readonly TimeSpan s_serverStartTimeout = TimeSpan.FromSeconds(30);

    private sealed record Phase(
        string Name, LatencyHistogram Latency, double Seconds, int Uploads, double OtherCores, BigPayloadCounters Client, BigPayloadCounters? Server);

    /// <summary>A message larger than the default MaxMessageSize (64 MiB) needs both sides to allow it.</summary>
    public static int MessageSize(int mebibytes) => Math.Max(64 * 1024 * 1024, (mebibytes + 1) * 1024 * 1024);

    /// <summary>The measurement's payload: random, so no layer could make it smaller.</summary>
    public static byte[] Payload(int mebibytes)
    {
        byte[] payload = new byte[mebibytes * 1024 * 1024];
        new Random(mebibytes).NextBytes(payload);
        return payload;
    }

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        int mebibytes = options.BigPayloadMib!.Value;
        int callers = options.Callers.Count == 1 ? options.Callers[0] : 100;
        int messageSize = MessageSize(mebibytes);
        byte[] payload = Payload(mebibytes);
        MuxServer? server = null;
        ServerProcess? child = null;
        EndPoint endPoint;
        if (options.BigServerProcess)
        {
            child = await ServerProcess.StartAsync(
                BenchSystems.Mux, s_serverStartTimeout, arguments: ["--big-payload-mib", mebibytes.ToString(CultureInfo.InvariantCulture)]);
            endPoint = new IPEndPoint(IPAddress.Loopback, child.Port);
        }
        else
        {
            server = new MuxServer(new MuxServerOptions
            {
                EndPoint = new IPEndPoint(IPAddress.Loopback, 0), MaxFrameSize = FrameSize, MaxMessageSize = messageSize,
            });
            server.AddService<IBigPayloadService>(new BigPayloadService(payload));
            await server.StartAsync();
            endPoint = server.LocalEndPoint!;
        }

        try
        {
            await using MuxClient client = await MuxClient.ConnectAsync(
                endPoint, new MuxClientOptions { MaxFrameSize = FrameSize, MaxMessageSize = messageSize, CallTimeout = TimeSpan.FromMinutes(5) });
            IBigPayloadService proxy = client.CreateProxy<IBigPayloadService>();
            return await RunPhasesAsync(options, proxy, payload, callers, serverInChild: child is not null);
        }
        finally
        {
            if (server is not null)
            {
                await server.DisposeAsync();
            }

            if (child is not null)
            {
                await child.DisposeAsync();
            }
        }
    }

    private static async Task<int> RunPhasesAsync(RunnerOptions options, IBigPayloadService proxy, byte[] payload, int callers, bool serverInChild)
    {
        int mebibytes = options.BigPayloadMib!.Value;
        string transfer = options.BigDownload ? "download" : "upload";
        using LargeObjectSampler? sampler = options.LohEvents ? new LargeObjectSampler() : null;

        string window = options.BigTransfers is { } count ? $"window {options.Seconds} s idle and exactly {count} {transfer}s during" : $"window {options.Seconds} s";
        string processes = serverInChild ? "client here, server in a child process" : "client and server in this process";
        Console.WriteLine($"Large-payload measurement: {callers} callers of Add (each pausing {options.PauseMs} ms after every call) on one connection, with and without one caller that {transfer}s {mebibytes} MiB back to back; {processes}; {window}, after {options.Warmup} s warm-up per phase; {Environment.ProcessorCount} cores, .NET {Environment.Version}.");
        var phases = new List<Phase>
        {
            await MeasureAsync("idle", proxy, callers, null, options, sampler, serverInChild),
            await MeasureAsync($"during {mebibytes} MiB {transfer}s", proxy, callers, payload, options, sampler, serverInChild),
            await MeasureAsync("idle (again)", proxy, callers, null, options, sampler, serverInChild),
        };

        // The sending side of an upload is the client, of a download the server; in one process both are the one.
        Console.WriteLine();
        Console.WriteLine($"| phase | small calls | calls/s | p50 µs | p99 µs | max µs | {transfer}s | {transfer} MB/s | copies/payload byte, sender | copies/payload byte, receiver | gen2 GCs per 100 ({(serverInChild ? "client + server" : "one process")}) | GC pause ms | other |");
        Console.WriteLine("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        foreach (Phase phase in phases)
        {
            double mbPerSecond = phase.Uploads * (double)payload.Length / phase.Seconds / 1e6;
            (string sender, string receiver) = Copies(phase, payload.Length, options.BigDownload);
            string gen2 = phase.Uploads == 0 ? "—"
                : phase.Server is { } onServer
                    ? string.Create(CultureInfo.InvariantCulture, $"{Per100(phase.Client.FullCollections, phase.Uploads)} + {Per100(onServer.FullCollections, phase.Uploads)}")
                    : Per100(phase.Client.FullCollections, phase.Uploads);
            double pauseMs = (phase.Client.Pause + (phase.Server?.Pause ?? TimeSpan.Zero)).TotalMilliseconds;
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"| {phase.Name} | {phase.Latency.Count:N0} | {phase.Latency.Count / phase.Seconds:N0} | {phase.Latency.PercentileMicroseconds(50):N0} | {phase.Latency.PercentileMicroseconds(99):N0} | {phase.Latency.MaxTicks / 10.0:N0} | {phase.Uploads} | {mbPerSecond:N0} | {sender} | {receiver} | {gen2} | {pauseMs:N1} | {phase.OtherCores:N2} |"));
        }

        double idleP99 = phases[0].Latency.PercentileMicroseconds(99);
        double busyP99 = phases[1].Latency.PercentileMicroseconds(99);
        double goal = (2 * idleP99) + 1000;
        Console.WriteLine();
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"Goal: p99 during the transfers <= 2 x idle p99 + 1 ms = {goal:N0} µs; measured {busyP99:N0} µs: {(busyP99 <= goal ? "met" : "NOT met")}."));
        if (options.BigTransfers is { } transfers)
        {
            Phase busy = phases[1];
            string server = busy.Server is { } s ? string.Create(CultureInfo.InvariantCulture, $", server {s.FullCollections}") : "";
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"Full collections during {transfers} x {mebibytes} MiB {transfer}s: {(busy.Server is null ? "" : "client ")}{busy.Client.FullCollections}{server} (GC pauses {(busy.Client.Pause + (busy.Server?.Pause ?? TimeSpan.Zero)).TotalMilliseconds:N1} ms in {busy.Seconds:N1} s)."));
        }

        return 0;
    }

    private static string Per100(int collections, int transfers) =>
        (collections * 100.0 / transfers).ToString("N1", CultureInfo.InvariantCulture);

    // Copies per payload byte on each side, with the copy points that make them up: s serializer, w writer; r reader,
    // f formatter, t whole message copied out. Only large messages reach these points, so the small calls add nothing.
    private static (string Sender, string Receiver) Copies(Phase phase, int payloadLength, bool download)
    {
        if (phase.Uploads == 0)
        {
            return ("—", "—");
        }

        double bytes = phase.Uploads * (double)payloadLength;
        BigPayloadCounters client = phase.Client;
        BigPayloadCounters sending = phase.Server is { } server && download ? server : client;
        BigPayloadCounters receiving = phase.Server is { } server2 && !download ? server2 : client;
        string sender = string.Create(CultureInfo.InvariantCulture,
            $"{sending.SenderBytes / bytes:N2} (s {sending.Serialized / bytes:N2}, w {sending.Written / bytes:N2})");
        string receiver = string.Create(CultureInfo.InvariantCulture,
            $"{receiving.ReceiverBytes / bytes:N2} (r {receiving.Reassembled / bytes:N2}, f {receiving.Deserialized / bytes:N2}, t {receiving.Taken / bytes:N2})");
        return (sender, receiver);
    }

    private static async Task<Phase> MeasureAsync(
        string name, IBigPayloadService proxy, int callers, byte[]? payload, RunnerOptions options, LargeObjectSampler? sampler, bool serverInChild)
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
                    windowOpen.SetResult(await WindowMark.TakeAsync(proxy, serverInChild).ConfigureAwait(false));
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
                    windowClosed.SetResult(await WindowMark.TakeAsync(proxy, serverInChild).ConfigureAwait(false));
                }
            }
        });

        await Task.Delay(TimeSpan.FromSeconds(options.Warmup));
        using Process self = Process.GetCurrentProcess();
        MachineCpu? machineStart = MachineCpu.Take();
        TimeSpan cpuStart = self.TotalProcessorTime;
        // In one process, its collections pause both sides of every call; with a server process, each pauses its own.
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
            first = await WindowMark.TakeAsync(proxy, serverInChild);
            Volatile.Write(ref measuring, true);
            await Task.Delay(TimeSpan.FromSeconds(options.Seconds));
            Volatile.Write(ref measuring, false);
            last = await WindowMark.TakeAsync(proxy, serverInChild);
        }

        double seconds = Stopwatch.GetElapsedTime(first.Timestamp, last.Timestamp).TotalSeconds;
        self.Refresh();
        TimeSpan cpu = self.TotalProcessorTime - cpuStart;
        BigPayloadCounters clientCounters = last.Client - first.Client;
        BigPayloadCounters? serverCounters = last.Server is { } serverLast && first.Server is { } serverFirst ? serverLast - serverFirst : null;
        int fullCollections = clientCounters.FullCollections + (serverCounters?.FullCollections ?? 0);
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

        return new Phase(name, merged, seconds, uploads, other, clientCounters, serverCounters);
    }

    /// <summary>The clocks and the copy and collection counters of each process at one edge of a window.</summary>
    private readonly record struct WindowMark(long Timestamp, DateTime UtcNow, BigPayloadCounters Client, BigPayloadCounters? Server)
    {
        public static async Task<WindowMark> TakeAsync(IBigPayloadService proxy, bool serverInChild)
        {
            BigPayloadCounters? server = serverInChild ? BigPayloadCounters.From(await proxy.Counters().ConfigureAwait(false)) : null;
            return new WindowMark(Stopwatch.GetTimestamp(), DateTime.UtcNow, BigPayloadCounters.Take(), server);
        }
    }
}
