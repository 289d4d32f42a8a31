using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace Mux.LoadRunner;

/// <summary>
/// --stream LIST: the throughput of ONE server stream on ONE connection, the server a child process
/// over 127.0.0.1 TCP. Each entry is KIND:COUNT, KIND being "int" (an int per item) or a byte size
/// (a byte[] of that size per item). Per entry: one warm-up stream of a tenth of the items, then
/// the measured stream; reports items/s, payload MB/s (4 bytes per int), CPU per item of client
/// and server, and the CPU other processes used meanwhile (the machine is shared).
/// </summary>
internal static class StreamMeasurement
{
    private static readonly TimeSpan s_serverStartTimeout = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_streamTimeout = TimeSpan.FromMinutes(10);

    public static async Task<int> RunAsync(RunnerOptions options)
    {
        AppDomain.CurrentDomain.ProcessExit += (_, _) => ServerProcess.KillAll();
        Console.CancelKeyPress += (_, _) => ServerProcess.KillAll();
        var defaults = new MuxClientOptions();
        Console.WriteLine($"Mux stream throughput: one server stream on one connection, server in a child process over 127.0.0.1 TCP, StreamWindow {defaults.StreamWindow} (default), {Environment.ProcessorCount} cores.");
        Console.WriteLine($"{"item",-10} {"items",10} {"seconds",8} {"items/s",12} {"MB/s",9} {"cli us/i",9} {"srv us/i",9} {"other",6}");
        bool ok = true;
        foreach ((string kind, int count) in options.Streams!)
        {
            ok &= await MeasureAsync(kind, count);
        }

        return ok ? 0 : 1;
    }

    private static async Task<bool> MeasureAsync(string kind, int count)
    {
        await using ServerProcess server = await ServerProcess.StartAsync(BenchSystems.Mux, s_serverStartTimeout);
        var endPoint = new IPEndPoint(IPAddress.Loopback, server.Port);
        await using MuxClient client = await MuxClient.ConnectAsync(endPoint, new MuxClientOptions { MaxFrameSize = 64 * 1024 * 1024 });
        IBenchStreams streams = client.CreateProxy<IBenchStreams>();
        int size = kind == "int" ? sizeof(int) : int.Parse(kind, NumberStyles.None, CultureInfo.InvariantCulture);
        using var timeout = new CancellationTokenSource(s_streamTimeout);

        await ReadAsync(streams, kind, Math.Max(1, count / 10), size, timeout.Token);

        server.Mark("begin");
        MachineCpu? machineBegin = MachineCpu.Take();
        ProcessCounters clientBegin = ProcessCounters.Take();
        long started = Stopwatch.GetTimestamp();
        long received = await ReadAsync(streams, kind, count, size, timeout.Token);
        double seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        ProcessCounters clientDelta = ProcessCounters.Take() - clientBegin;
        MachineCpu? machineEnd = MachineCpu.Take();
        server.Mark("end");

        using var statsTimeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        ServerStats stats = await MuxBenchClient.GetServerStatsAsync(endPoint, statsTimeout.Token);
        double others = machineBegin is MachineCpu b && machineEnd is MachineCpu e
            ? Math.Max(0, (e.Busy - b.Busy - clientDelta.Cpu - TimeSpan.FromMicroseconds(stats.CpuMicroseconds)).TotalSeconds) / seconds
            : double.NaN;
        string label = kind == "int" ? "int" : FormatSize(size);
        Console.WriteLine(string.Create(
            CultureInfo.InvariantCulture,
            $"{label,-10} {received,10:N0} {seconds,8:0.000} {received / seconds,12:N0} {received * (double)size / seconds / 1e6,9:N1} {clientDelta.Cpu.TotalMicroseconds / received,9:0.000} {(double)stats.CpuMicroseconds / received,9:0.000} {others,6:0.00}"));
        if (received != count)
        {
            Console.WriteLine($"  error: {received} items arrived of {count}");
            return false;
        }

        return true;
    }

    private static async Task<long> ReadAsync(IBenchStreams streams, string kind, int count, int size, CancellationToken cancellationToken)
    {
        long received = 0;
        if (kind == "int")
        {
            await foreach (int value in streams.Ints(count, cancellationToken))
            {
                if (value != received)
                {
                    throw new InvalidOperationException($"Item {received} arrived as {value}.");
                }

                received++;
            }

            return received;
        }

        await foreach (byte[] blob in streams.Blobs(count, size, cancellationToken))
        {
            if (blob.Length != size)
            {
                throw new InvalidOperationException($"Item {received} has {blob.Length} bytes, not {size}.");
            }

            received++;
        }

        return received;
    }

    private static string FormatSize(int size) =>
        size % (1024 * 1024) == 0 ? $"{size / (1024 * 1024)} MiB" : size % 1024 == 0 ? $"{size / 1024} KiB" : $"{size} B";
}
