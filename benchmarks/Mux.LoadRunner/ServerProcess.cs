using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.InteropServices;
using System.Text;

namespace Mux.LoadRunner;

/// <summary>
/// A server child process: this same assembly with "--role server", run by the dotnet host.
/// Disposing closes its stdin (it stops), and kills the whole process tree if it has not exited
/// within a few seconds. Every live child is also killed when the orchestrator exits.
/// </summary>
internal sealed class ServerProcess : IAsyncDisposable
{
    private static readonly ConcurrentDictionary<Process, byte> s_live = new();
    private readonly Process _process;
    private readonly StringBuilder _stderr = new();
    private readonly Task _stderrPump;
    private Task? _stdoutPump;

    private ServerProcess(Process process)
    {
        _process = process;
        _stderrPump = PumpAsync(process.StandardError, _stderr);
    }

    public int Port { get; private set; }

    public int ProcessId => _process.Id;

    /// <summary>What the child wrote to stderr so far (at most 4 KiB).</summary>
    public string Stderr
    {
        get
        {
            lock (_stderr)
            {
                return _stderr.ToString().Trim();
            }
        }
    }

    /// <summary>Kills every child still running; for process exit and Ctrl+C.</summary>
    public static void KillAll()
    {
        foreach (Process process in s_live.Keys)
        {
            TryKill(process);
        }
    }

    /// <param name="port">The port to listen on; 0 for any free port (a restarted server asks for
    /// the port its predecessor had).</param>
    /// <param name="arguments">More arguments for the server role (the large-payload measurement's).</param>
    public static async Task<ServerProcess> StartAsync(string system, TimeSpan timeout, int port = 0, IReadOnlyList<string>? arguments = null)
    {
        (string host, string assembly) = ResolveSelf();
        var start = new ProcessStartInfo(host)
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(assembly);
        foreach (string argument in new[] { "--role", "server", "--system", system, "--port", port.ToString(CultureInfo.InvariantCulture) })
        {
            start.ArgumentList.Add(argument);
        }

        foreach (string argument in arguments ?? [])
        {
            start.ArgumentList.Add(argument);
        }

        if (PassThroughInterceptor.Enabled)
        {
            start.ArgumentList.Add("--interceptors");
        }

        if (MetricsTally.Current is not null)
        {
            start.ArgumentList.Add("--metrics");
        }

        Process process = Process.Start(start) ?? throw new InvalidOperationException($"Could not start {host}.");
        s_live.TryAdd(process, 0);
        var server = new ServerProcess(process);
        try
        {
            using var cancel = new CancellationTokenSource(timeout);
            while (true)
            {
                string? line;
                try
                {
                    line = await process.StandardOutput.ReadLineAsync(cancel.Token);
                }
                catch (OperationCanceledException)
                {
                    throw new TimeoutException($"The {system} server did not print LISTENING within {timeout.TotalSeconds:0} s. {server.Stderr}".Trim());
                }

                if (line is null)
                {
                    await process.WaitForExitAsync(CancellationToken.None).WaitAsync(TimeSpan.FromSeconds(2)).ContinueWith(static _ => { }, TaskScheduler.Default);
                    await server._stderrPump.WaitAsync(TimeSpan.FromSeconds(2)).ContinueWith(static _ => { }, TaskScheduler.Default);
                    throw new InvalidOperationException($"The {system} server exited before listening. {server.Stderr}".Trim());
                }

                if (line.StartsWith("LISTENING ", StringComparison.Ordinal) &&
                    int.TryParse(line.AsSpan("LISTENING ".Length), NumberStyles.None, CultureInfo.InvariantCulture, out int bound))
                {
                    server.Port = bound;
                    server._stdoutPump = PumpAsync(process.StandardOutput, null);
                    return server;
                }
            }
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
    }

    /// <summary>Writes a window mark ("begin" or "end") to the child's stdin.</summary>
    /// <exception cref="InvalidOperationException">The server process has exited.</exception>
    public void Mark(string mark)
    {
        try
        {
            _process.StandardInput.WriteLine(mark);
            _process.StandardInput.Flush();
        }
        catch (IOException ex)
        {
            string exit = _process.HasExited ? $" with exit code {_process.ExitCode}" : "";
            throw new InvalidOperationException($"The server process exited{exit} (writing \"{mark}\" to its stdin: {ex.Message}). {Stderr}".Trim(), ex);
        }
    }

    /// <summary>Kills the server process now, as a crash would: its connections are reset, with
    /// no GoAway. <see cref="DisposeAsync"/> still cleans up.</summary>
    public void Kill() => TryKill(_process);

    public async ValueTask DisposeAsync()
    {
        try
        {
            try
            {
                _process.StandardInput.Close(); // the server stops at end of input
            }
            catch (IOException)
            {
                // Already gone.
            }

            try
            {
                await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(5));
            }
            catch (TimeoutException)
            {
                TryKill(_process);
                await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(5)).ContinueWith(static _ => { }, TaskScheduler.Default);
            }

            await Task.WhenAll(_stderrPump, _stdoutPump ?? Task.CompletedTask).WaitAsync(TimeSpan.FromSeconds(2)).ContinueWith(static _ => { }, TaskScheduler.Default);
        }
        finally
        {
            TryKill(_process);
            s_live.TryRemove(_process, out _);
            _process.Dispose();
        }
    }

    private static void TryKill(Process process)
    {
        try
        {
            if (!process.HasExited)
            {
                process.Kill(entireProcessTree: true);
            }
        }
        catch (Exception ex) when (ex is InvalidOperationException or System.ComponentModel.Win32Exception or NotSupportedException)
        {
            // Exited meanwhile, or never started.
        }
    }

    private static async Task PumpAsync(StreamReader reader, StringBuilder? keep)
    {
        try
        {
            var buffer = new char[1024];
            int read;
            while ((read = await reader.ReadAsync(buffer)) > 0)
            {
                if (keep is not null)
                {
                    lock (keep)
                    {
                        if (keep.Length < 4096)
                        {
                            keep.Append(buffer, 0, Math.Min(read, 4096 - keep.Length));
                        }
                    }
                }
            }
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException)
        {
            // The child is gone.
        }
    }

    /// <summary>The dotnet host and this assembly's path, so the child runs "dotnet &lt;same dll&gt;".</summary>
    private static (string Host, string Assembly) ResolveSelf()
    {
        string assembly = typeof(ServerProcess).Assembly.Location;
        if (string.IsNullOrEmpty(assembly))
        {
            throw new InvalidOperationException("The runner must run from its .dll (not single-file) to start server processes.");
        }

        string? current = Environment.ProcessPath;
        if (current is not null && Path.GetFileNameWithoutExtension(current) == "dotnet")
        {
            return (current, assembly);
        }

        // Started through the apphost: find the dotnet host of the runtime this process runs on
        // (<root>/shared/Microsoft.NETCore.App/<version>/ -> <root>/dotnet).
        string hostName = OperatingSystem.IsWindows() ? "dotnet.exe" : "dotnet";
        string? root = Path.GetDirectoryName(Path.GetDirectoryName(Path.GetDirectoryName(RuntimeEnvironment.GetRuntimeDirectory().TrimEnd(Path.DirectorySeparatorChar))));
        foreach (string? candidate in new[] { root is null ? null : Path.Combine(root, hostName), Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") })
        {
            if (candidate is not null && File.Exists(candidate))
            {
                return (candidate, assembly);
            }
        }

        return ("dotnet", assembly);
    }
}
