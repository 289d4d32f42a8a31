using System.Globalization;

namespace Mux.LoadRunner;

/// <summary>The command line of both roles.</summary>
internal sealed class RunnerOptions
{
    public const string Usage = """
        Usage: Mux.LoadRunner [--systems LIST] [--methods LIST] [--callers LIST]
                              [--seconds S] [--warmup S] [--out DIR]
               Mux.LoadRunner --role server --system SYSTEM [--port P]

          Orchestrator (default role): for every (system, method, callers) point, starts the server
          as a child process, runs N closed-loop callers over ONE connection in this process, and
          reports calls/s, latency percentiles, CPU and allocations per call, GCs, connections and
          frames per socket operation. Writes a table to the console, JSON + CSV files, the
          side-by-side Markdown tables (with Mux/peer ratios) and an SVG chart.
          --systems LIST   mux,raw-single,raw-batched,grpc,grpc-default,streamjsonrpc,signalr,mux-ws,
                           xrpc, mux-tls (Mux over TLS 1.3, only when asked for)
                           (default: all; grpc = grpc-dotnet on one HTTP/2 connection, grpc-default
                           = grpc-dotnet's defaults (more connections past 100 streams),
                           streamjsonrpc = MessagePack over one socket, signalr = MessagePack
                           over one WebSocket, mux-ws = Mux over one WebSocket to MapMux on
                           Kestrel; systems that cannot be built here are reported
                           as "unavailable: <reason>")
          --methods LIST   add,list1,list100,bytes1k (default: all four; bytes1k = Bytes(1024))
          --callers LIST   concurrent callers on the one connection (default
                           1,10,100,500,1000,2000,5000,10000: past 1000, Mux's default
                           MaxConcurrentCallsPerConnection, the calls wait for slots on the client)
          --seconds S      measured window per point (default 3)
          --warmup S       warm-up before each window (default 1)
          --out DIR        where the files go (default artifacts/loadrunner under the
                           repository root, else under the current directory)
          --interceptors   Mux servers and clients get one interceptor each that only awaits
                           next() (the call pipeline's own cost; docs/benchmarks.md)
          --metrics        metrics on: the runner and every server process it starts listen to
                           every instrument of the "Mux" meter (a MeterListener that keeps each
                           instrument's count and sum, allocation-free, and collects the observable
                           ones once a second); the sweep reports the measurements per call on
                           each side next to CPU and bytes per call (compare with a run without)
          --blocking-handler  (Mux systems only) in each point's window, one more caller on the
                           same connection calls a handler that blocks its server thread for 1 s
                           (Thread.Sleep), waits 1 s, and again; reports the other calls' latency
                           while a blocking call was in flight next to their latency otherwise

          Restart measurement (instead of the sweep): --restart-server-after S [--server-down S2]
          [--restarts N] with one Mux system (--systems mux or mux-tls), the first method and the
          first caller count: kills the server child process after S seconds of load, starts a
          new one on the same port S2 seconds later (default 3), N times (default 5), and reports
          the time from the new server listening to the client's first successful call (median,
          min, max) and the calls failed during each outage.

          Several servers (instead of the sweep): --servers LIST (for example 1,2,3) with
          --systems mux: for each N, N Mux server processes on N ports and ONE client over all of
          them (MuxClientOptions.EndPoints: one connection per server, calls spread by power of two
          choices); reports calls/s, latency, CPU per call (client; servers summed), the
          connections the servers accepted (must equal N), the smallest and largest share of calls
          an instance got, and the CPU other processes used.

          Stream throughput (instead of the sweep): --stream LIST, entries KIND:COUNT where KIND is
          int or an item size in bytes (for example int:1000000,32:1000000,1048576:1000): ONE
          server stream (IAsyncEnumerable) on ONE connection to a Mux server child process; reports
          items/s, payload MB/s, CPU per item of client and server, and other processes' CPU.

          Large-payload measurement (instead of the sweep): --big-payload-mib N [--big-download] [--callers C]
          [--pause-ms P] [--seconds S] [--warmup S]: a Mux server in this process, one connection,
          C (default 100) callers of Add that each pause P ms (default 5; 0 = closed loop) after
          every call, so the CPU is not saturated and latency shows queueing, first alone, then
          while one more caller uploads N MiB back to back, then alone again; prints small-call p50/p99 per phase, the uploads' MB/s
          and the other-CPU column (both sides allow 32 MiB frames, so N <= 31 also runs on a
          build that sends a message in one frame).
          --big-transfers T  the transfer phase's window is exactly T whole transfers (after the
                           warm-up) instead of --seconds, and the full collections in it are reported
          --loh-events     also lists, per phase, the arrays allocated on the large object heap
                           (the runtime's allocation events; costs a little CPU, so measure latency without it)
          --big-server-process  the server runs in a child process (--role server --system mux
                           --big-payload-mib N), the client here: copies and full collections are
                           then reported for each process
          Each phase also reports the payload bytes Mux's own code copied per payload byte, on the
          sending side (serializer into the message, writer into the socket's pipe) and on the
          receiving side (reader out of the receive buffer, formatter out of the message, a whole
          message copied out), from the counters Mux keeps at those points, and the full (gen2)
          collections per 100 transfers.

          Soak (instead of the sweep): --soak SECONDS [--servers N] [--callers C] [--pause-ms P]
          [--restart-server-after S] [--server-down S2] [--out DIR]: mixed load on ONE Mux client
          over N (default 3) Mux server processes (one connection each): C (default 32) callers of
          add and list1 alternating, each pausing P ms (default 5) after every call; a server stream
          and a client stream back to back; a 16 MiB upload or download (alternating) every 3 s;
          calls cancelled by their caller at random points (a slow handler, an endless server
          stream, an endless client stream); calls whose short deadline passes in a slower handler.
          Every S seconds (default a third of the run, at most 180) one server process is killed
          (SIGKILL, in turn) and restarted on its port S2 seconds later (default 3), and the client
          reconnects. Every minute (every 10 s for runs under 5 minutes) one line: the runner's
          working set and GC heap (after an aggressive full collection), its gen2 collections,
          calls/s, calls ended by kind (ok, connection lost, timeouts and cancellations as expected,
          other), errors outside the fault windows (a kill to 10 s after the client is back), calls
          in flight and stuck (outstanding 10 s past their deadline), and each server's resident
          set; the lines also go to soak-*.csv (with memory as it was before the collection, the
          resident set split into anonymous memory and mapped files, and the thread count), and
          memory over time to soak-*.svg. The summary compares memory at 1/6 and 5/6 of the run
          (target: within 10%) and ends with one line "soak: ... ok" or "soak: ... FAILED (...)".
          Exits 1 when a call was lost (made but never ended) or got stuck, when an error surfaced
          outside a fault window, or when a killed server or the client did not come back.

          Overload measurement (instead of the sweep): --overload [--overload-cap N] [--seconds S] [--warmup S]:
          a Mux server in this process with MuxServerOptions.MaxConcurrentCalls N (default: the
          core count) and a handler that spins 1 ms of CPU, one client connection with the default
          RetryBudget. First N closed-loop callers (the capacity: served calls/s, p99), then calls
          started at 10x that rate (open loop): served calls/s and p99 against the capacity, calls
          the server refused, the client retried and that failed, and calls that ran twice (counted
          by a unique id on the server; exits 1 if any did).

          Server role: listens on 127.0.0.1:P (0 = any free port), prints "LISTENING <port>", and
          serves until stdin closes. Lines "begin"/"end" on stdin mark the measured window.
        """;

    private const int MaxSoakSeconds = 7 * 24 * 3600;

    public string Role { get; private set; } = "orchestrator";

    public string? ServerSystem { get; private set; }

    public int Port { get; private set; }

    public IReadOnlyList<string> Systems { get; private set; } = [.. BenchSystems.All];

    public IReadOnlyList<string> Methods { get; private set; } = BenchMethod.Names;

    public IReadOnlyList<int> Callers { get; private set; } = [1, 10, 100, 500, 1000, 2000, 5000, 10000];

    public double Seconds { get; private set; } = 3;

    public double Warmup { get; private set; } = 1;

    public string? OutDirectory { get; private set; }

    public bool Help { get; private set; }

    /// <summary>Seconds of load before each server kill; set, it selects the restart measurement.</summary>
    public double? RestartServerAfter { get; private set; }

    /// <summary>Seconds between a server kill and the start of its replacement.</summary>
    public double ServerDown { get; private set; } = 3;

    /// <summary>Set, it selects the large-payload measurement: MiB per upload.</summary>
    public int? BigPayloadMib { get; private set; }

    /// <summary>The large-payload measurement's big caller downloads (a response of that size) instead of uploading.</summary>
    public bool BigDownload { get; private set; }

    /// <summary>Set, the large-payload measurement's transfer window is exactly this many transfers.</summary>
    public int? BigTransfers { get; private set; }

    /// <summary>The large-payload measurement lists the large-object-heap allocations of each phase.</summary>
    public bool LohEvents { get; private set; }

    /// <summary>The large-payload measurement's server runs in a child process.</summary>
    public bool BigServerProcess { get; private set; }

    /// <summary>The large-payload measurement's pause of each small caller after each call, in ms.</summary>
    public int PauseMs { get; private set; } = 5;

    /// <summary>How many kill-and-restart cycles the restart measurement runs.</summary>
    public int Restarts { get; private set; } = 5;

    /// <summary>Set, it selects the soak: its length in seconds.</summary>
    public double? SoakSeconds { get; private set; }

    /// <summary>Server counts of the several-servers measurement; set, it selects it.</summary>
    public IReadOnlyList<int>? Servers { get; private set; }

    public IReadOnlyList<(string Kind, int Count)>? Streams { get; private set; }

    /// <summary>--overload: selects the overload measurement.</summary>
    public bool Overload { get; private set; }

    /// <summary>--overload-cap: the server's MaxConcurrentCalls in the overload measurement; null for the core count.</summary>
    public int? OverloadCap { get; private set; }

    /// <summary>--metrics: both processes of a point listen to every instrument of the "Mux" meter.</summary>
    public bool Metrics { get; private set; }

    /// <summary>--blocking-handler: each point's window also runs calls whose handler blocks its thread for 1 s.</summary>
    public bool BlockingHandler { get; private set; }

    public static RunnerOptions Parse(string[] args)
    {
        var options = new RunnerOptions();
        for (int i = 0; i < args.Length; i++)
        {
            string name = args[i];
            string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{name} needs a value.");
            switch (name)
            {
                case "--help" or "-h" or "-?":
                    options.Help = true;
                    break;
                case "--role":
                    options.Role = Value() switch
                    {
                        "server" => "server",
                        "orchestrator" => "orchestrator",
                        string other => throw new ArgumentException($"--role {other}: expected server or orchestrator."),
                    };
                    break;
                case "--system":
                    options.ServerSystem = Value();
                    break;
                case "--port":
                    options.Port = int.TryParse(Value(), NumberStyles.None, CultureInfo.InvariantCulture, out int port) && port <= 65535
                        ? port
                        : throw new ArgumentException("--port needs a number from 0 to 65535.");
                    break;
                case "--systems":
                    options.Systems = List(name, Value(), s => BenchSystems.IsKnown(s)
                        ? s
                        : throw new ArgumentException($"--systems: unknown system '{s}'; known: {string.Join(", ", BenchSystems.All)}."));
                    break;
                case "--methods":
                    options.Methods = List(name, Value(), m => BenchMethod.Names.Contains(m)
                        ? m
                        : throw new ArgumentException($"--methods: unknown method '{m}'; known: {string.Join(", ", BenchMethod.Names)}."));
                    break;
                case "--callers":
                    options.Callers = List(name, Value(), c => int.TryParse(c, NumberStyles.None, CultureInfo.InvariantCulture, out int n) && n is > 0 and <= 100_000
                        ? n
                        : throw new ArgumentException($"--callers: '{c}' is not a number from 1 to 100000."));
                    break;
                case "--seconds":
                    options.Seconds = ParseSeconds(name, Value(), allowZero: false);
                    break;
                case "--warmup":
                    options.Warmup = ParseSeconds(name, Value(), allowZero: true);
                    break;
                case "--restart-server-after":
                    options.RestartServerAfter = ParseSeconds(name, Value(), allowZero: false);
                    break;
                case "--server-down":
                    options.ServerDown = ParseSeconds(name, Value(), allowZero: true);
                    break;
                case "--restarts":
                    options.Restarts = int.TryParse(Value(), NumberStyles.None, CultureInfo.InvariantCulture, out int restarts) && restarts is > 0 and <= 100
                        ? restarts
                        : throw new ArgumentException("--restarts needs a number from 1 to 100.");
                    break;
                case "--soak":
                    options.SoakSeconds = double.TryParse(Value(), NumberStyles.Float, CultureInfo.InvariantCulture, out double soak) && soak is >= 1 and <= MaxSoakSeconds
                        ? soak
                        : throw new ArgumentException($"--soak needs a number of seconds from 1 to {MaxSoakSeconds} (a week).");
                    break;
                case "--servers":
                    options.Servers = List(name, Value(), c => int.TryParse(c, NumberStyles.None, CultureInfo.InvariantCulture, out int n) && n is > 0 and <= 16
                        ? n
                        : throw new ArgumentException($"--servers: '{c}' is not a number from 1 to 16."));
                    break;
                case "--stream":
                    options.Streams = List(name, Value(), ParseStream);
                    break;
                case "--big-payload-mib":
                    options.BigPayloadMib = int.TryParse(Value(), NumberStyles.None, CultureInfo.InvariantCulture, out int mib) && mib is > 0 and <= 1024
                        ? mib
                        : throw new ArgumentException("--big-payload-mib needs a number from 1 to 1024.");
                    break;
                case "--big-download":
                    options.BigDownload = true;
                    break;
                case "--big-transfers":
                    options.BigTransfers = int.TryParse(Value(), NumberStyles.None, CultureInfo.InvariantCulture, out int transfers) && transfers is > 0 and <= 100_000
                        ? transfers
                        : throw new ArgumentException("--big-transfers needs a number from 1 to 100000.");
                    break;
                case "--loh-events":
                    options.LohEvents = true;
                    break;
                case "--big-server-process":
                    options.BigServerProcess = true;
                    break;
                case "--pause-ms":
                    options.PauseMs = int.TryParse(Value(), NumberStyles.None, CultureInfo.InvariantCulture, out int pause) && pause <= 10_000
                        ? pause
                        : throw new ArgumentException("--pause-ms needs a number from 0 to 10000.");
                    break;
                case "--overload":
                    options.Overload = true;
                    break;
                case "--overload-cap":
                    options.OverloadCap = int.TryParse(Value(), NumberStyles.None, CultureInfo.InvariantCulture, out int overloadCap) && overloadCap is > 0 and <= 100_000
                        ? overloadCap
                        : throw new ArgumentException("--overload-cap needs a number from 1 to 100000.");
                    break;
                case "--out":
                    options.OutDirectory = Value();
                    break;
                case "--interceptors":
                    PassThroughInterceptor.Enabled = true;
                    break;
                case "--metrics":
                    options.Metrics = true;
                    break;
                case "--blocking-handler":
                    options.BlockingHandler = true;
                    break;
                default:
                    throw new ArgumentException($"Unknown option '{name}'.");
            }
        }

        if (options.Role == "server" && (options.ServerSystem is null || !BenchSystems.Runnable.Contains(options.ServerSystem)))
        {
            throw new ArgumentException($"--role server needs --system {string.Join("|", BenchSystems.Runnable)}.");
        }

        if (options.BlockingHandler && options.Systems.Any(s => s is not (BenchSystems.Mux or BenchSystems.MuxTls)))
        {
            throw new ArgumentException("--blocking-handler needs --systems mux (or mux-tls): only the Mux bench service has the blocking method.");
        }

        if (options.BlockingHandler && (options.Streams is not null || options.Servers is not null || options.BigPayloadMib is not null || options.RestartServerAfter is not null))
        {
            throw new ArgumentException("--blocking-handler runs with the sweep only, not with --stream, --servers, --big-payload-mib or --restart-server-after.");
        }

        return options;
    }

    private static T[] List<T>(string name, string value, Func<string, T> parse)
    {
        string[] items = value.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
        if (items.Length == 0)
        {
            throw new ArgumentException($"{name} needs at least one value.");
        }

        return [.. items.Select(parse).Distinct()];
    }

    private static (string Kind, int Count) ParseStream(string entry)
    {
        string[] parts = entry.Split(':');
        bool kindOk = parts.Length == 2 && (parts[0] == "int" || (int.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out int size) && size is > 0 and <= 64 * 1024 * 1024 - 64));
        if (!kindOk || !int.TryParse(parts[1], NumberStyles.None, CultureInfo.InvariantCulture, out int count) || count < 1)
        {
            throw new ArgumentException($"--stream: '{entry}' is not KIND:COUNT (KIND int or a size in bytes up to 64 MiB, COUNT at least 1).");
        }

        return (parts[0], count);
    }

    private static double ParseSeconds(string name, string value, bool allowZero)
    {
        if (!double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out double seconds) ||
            double.IsNaN(seconds) || seconds < 0 || (!allowZero && seconds == 0) || seconds > 3600)
        {
            throw new ArgumentException($"{name} needs a number of seconds{(allowZero ? "" : " above 0")}, at most 3600.");
        }

        return seconds;
    }
}
