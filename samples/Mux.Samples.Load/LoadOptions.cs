using System.Net;

namespace Mux.Samples.Load;

/// <summary>The command line of the load sample.</summary>
internal sealed class LoadOptions
{
    public int Callers { get; private set; } = 500;

    /// <summary>How long to run; 0 runs until Ctrl+C.</summary>
    public int Seconds { get; private set; } = 10;

    public string Method { get; private set; } = "list1";

    /// <summary>Connect to a server started elsewhere instead of starting one in-process.</summary>
    public EndPoint? Connect { get; private set; }

    /// <summary>Only run a server on this endpoint, until Ctrl+C.</summary>
    public EndPoint? Serve { get; private set; }

    /// <summary>--help: print the usage on standard output and exit 0.</summary>
    public bool Help { get; private set; }

    public const string Usage = """
        Usage: Mux.Samples.Load [--callers N] [--seconds S] [--method add|list1|list100]
                                [--connect host:port | --serve host:port]

          With no arguments: starts a server on 127.0.0.1 in this process, opens ONE client
          connection, and runs 500 concurrent callers of IUserService.List(1) for 10 seconds.
          --callers N        concurrent callers sharing the one connection (default 500)
          --seconds S        how long to run (default 10); 0 runs until Ctrl+C
          --method M         add = Add(int,int), list1 = List(1), list100 = List(100) (default list1)
          --connect h:p      load a server started elsewhere (e.g. with --serve)
          --serve h:p        run only the server, until Ctrl+C
          --help             print this and exit 0
        Ctrl+C (or SIGTERM) stops the callers early; the summary is printed all the same and
        the exit code is 0. Otherwise the exit code is 0 when every call succeeded, 1 when any
        call failed (a server restart fails the calls in flight), and 2 for a bad option.
        A server restart does not end the load: calls in flight fail (counted as connection
        errors), the next calls wait until the client has reconnected, then go on.
        The last line printed is a JSON summary.
        """;

    public static LoadOptions Parse(string[] args)
    {
        var options = new LoadOptions();
        for (int i = 0; i < args.Length; i++)
        {
            string name = args[i];
            string Value() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{name} needs a value.");
            switch (name)
            {
                case "--help" or "-h" or "-?":
                    options.Help = true;
                    break;
                case "--callers":
                    options.Callers = ParsePositive(name, Value());
                    break;
                case "--seconds":
                    options.Seconds = ParseNonNegative(name, Value());
                    break;
                case "--method":
                    options.Method = Value() switch
                    {
                        "add" => "add",
                        "list1" => "list1",
                        "list100" => "list100",
                        var other => throw new ArgumentException($"Unknown method '{other}'; use add, list1 or list100."),
                    };
                    break;
                case "--connect":
                    options.Connect = ParseEndPoint(name, Value());
                    break;
                case "--serve":
                    options.Serve = ParseEndPoint(name, Value());
                    break;
                default:
                    throw new ArgumentException($"Unknown option '{name}'.");
            }
        }

        return options;
    }

    private static int ParsePositive(string name, string value) =>
        int.TryParse(value, out int n) && n > 0 ? n : throw new ArgumentException($"{name} must be a positive integer, not '{value}'.");

    private static int ParseNonNegative(string name, string value) =>
        int.TryParse(value, out int n) && n >= 0 ? n : throw new ArgumentException($"{name} must be 0 or a positive integer, not '{value}'.");

    private static EndPoint ParseEndPoint(string name, string value)
    {
        int colon = value.LastIndexOf(':');
        if (colon <= 0 || !int.TryParse(value.AsSpan(colon + 1), out int port) || port is < 0 or > 65535)
        {
            throw new ArgumentException($"{name} expects host:port, not '{value}'.");
        }

        string host = value[..colon];
        return IPAddress.TryParse(host, out IPAddress? address) ? new IPEndPoint(address, port) : new DnsEndPoint(host, port);
    }
}
