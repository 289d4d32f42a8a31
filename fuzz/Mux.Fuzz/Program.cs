using System.Runtime.CompilerServices;
using Mux.Fuzz;
using SharpFuzz;

// Usage (see fuzz/README.md and fuzz/run.sh, which instrument Mux.dll and start afl-fuzz):
//   Mux.Fuzz frames|server|client            run under afl-fuzz (input on stdin, persistent mode)
//   Mux.Fuzz seed DIRECTORY                  write the starting corpus of frames and server
//   Mux.Fuzz seed client DIRECTORY           write the client target's (what a server sends)
//   Mux.Fuzz replay frames|server|client F.. run the target once per file, outside AFL (reproduce a finding)
// seed and replay must run on an uninstrumented build (dotnet run --project fuzz/Mux.Fuzz): the
// instrumented Mux.dll writes coverage to memory only Fuzzer.Run sets up. For the same reason this
// file never names a type of the targets assembly, whose module initializer (generated service
// registration) calls into Mux: Modes does, and it is first called inside Fuzzer.Run.
if (args.Length == 1 && args[0] is "frames" or "server" or "client")
{
    string name = args[0];
    Action<ReadOnlySpan<byte>>? target = null;
    Fuzzer.Run(stream =>
    {
        using var copy = new MemoryStream();
        stream.CopyTo(copy);
        target ??= Modes.Target(name);
        target(copy.GetBuffer().AsSpan(0, (int)copy.Length));
    });
    return 0;
}

if (args.Length >= 3 && args[0] == "seed" && args[1] == "client")
{
    Modes.Seed(args[2], client: true);
    return 0;
}

if (args.Length >= 2 && args[0] == "seed")
{
    Modes.Seed(args[1], client: false);
    return 0;
}

if (args.Length >= 3 && args[0] == "replay")
{
    Modes.Replay(args[1], args[2..]);
    return 0;
}

Console.Error.WriteLine("usage: Mux.Fuzz frames|server|client | seed [client] DIR | replay frames|server|client FILE...");
return 2;

/// <summary>Everything that touches the targets assembly, kept out of Main (see above).</summary>
internal static class Modes
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Action<ReadOnlySpan<byte>> Target(string name) => name switch
    {
        "frames" => FuzzTargets.Frames,
        "server" => FuzzTargets.Server,
        "client" => ClientFuzzTarget.Client,
        _ => throw new ArgumentException($"Unknown target '{name}': use frames, server or client.", nameof(name)),
    };

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Seed(string directory, bool client)
    {
        Directory.CreateDirectory(directory);
        foreach ((string name, byte[] bytes) in client ? SeedCorpus.CreateClient() : SeedCorpus.Create())
        {
            File.WriteAllBytes(Path.Combine(directory, name), bytes);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Replay(string name, string[] files)
    {
        Action<ReadOnlySpan<byte>> target = Target(name);
        foreach (string file in files)
        {
            byte[] input = File.ReadAllBytes(file);
            if (name == "server")
            {
                Console.WriteLine($"ok {file} (the server answered {FuzzTargets.ServerAnswer(input)} bytes)");
            }
            else if (name == "client")
            {
                Console.WriteLine($"ok {file} ({ClientFuzzTarget.Run(input, ClientFuzzTarget.QuietTime)})");
            }
            else
            {
                target(input);
                Console.WriteLine($"ok {file}");
            }
        }
    }
}
