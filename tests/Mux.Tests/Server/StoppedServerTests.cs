using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using Mux.Tests.Infrastructure;
using Mux.Tests.Security;

namespace Mux.Tests.Server;

/// <summary>
/// A stopped (or disposed) server says so the same way from every public method that would start
/// it or hand it a connection: ObjectDisposedException naming MuxServer (an InvalidOperationException,
/// so code that catches that still does). And its lifecycle methods, called twice, at once or in any
/// order, neither hang nor throw anything else, nor leave anything listening or open.
/// </summary>
public sealed class StoppedServerTests
{
    public static TheoryData<string, bool, bool> EntryPoints()
    {
        var data = new TheoryData<string, bool, bool>();
        foreach (string entry in new[] { "Start", "Accept", "AcceptAsync", "AcceptAsync+Tls", "ConnectInProcess" })
        {
            foreach (bool started in new[] { false, true })
            {
                foreach (bool disposed in new[] { false, true })
                {
                    data.Add(entry, started, disposed);
                }
            }
        }

        return data;
    }

    /// <summary>Accept and AcceptAsync used to throw a plain InvalidOperationException where
    /// StartAsync threw ObjectDisposedException.</summary>
    [Theory]
    [MemberData(nameof(EntryPoints))]
    public async Task AStoppedServer_RefusesEveryEntryPoint_WithObjectDisposedException(string entry, bool started, bool disposed)
    {
        var server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0), Tls = entry.EndsWith("Tls", StringComparison.Ordinal) ? TestCertificates.ServerTls() : null });
        server.AddService<ITestService>(new TestService());
        if (started)
        {
            await server.StartAsync();
        }

        await (disposed ? server.DisposeAsync().AsTask() : server.StopAsync()).WaitAsync(TestHost.Patience);
        var toServer = new Pipe();
        var toClient = new Pipe();
        var stream = new DuplexStream(toServer.Reader.AsStream(), toClient.Writer.AsStream());

        Exception? error = await Record.ExceptionAsync(() => entry switch
        {
            "Start" => server.StartAsync(),
            "Accept" => Task.Run(() => server.Accept(new PipePair(toServer.Reader, toClient.Writer))),
            "ConnectInProcess" => server.ConnectInProcessAsync(),
            _ => server.AcceptAsync(stream),
        });

        var refused = Assert.IsType<ObjectDisposedException>(error);
        Assert.Equal(nameof(MuxServer), refused.ObjectName);
        Assert.Contains("stopped", refused.Message, StringComparison.Ordinal);
        Assert.False(server.IsListening);
        Assert.Equal(0, server.ActiveConnections);
    }

    public static TheoryData<string, string, bool> Pairs()
    {
        string[] operations = ["Start", "Accept", "AcceptAsync", "Stop", "Dispose"];
        var data = new TheoryData<string, string, bool>();
        foreach (string first in operations)
        {
            foreach (string second in operations)
            {
                data.Add(first, second, false);
                data.Add(first, second, true);
            }
        }

        return data;
    }

    /// <summary>Two of the lifecycle methods, one after the other or at once (many times), then a
    /// disposal: each returns within patience and throws at most what it documents (StartAsync on
    /// a started server, ObjectDisposedException on a stopped one), and once the disposal has
    /// returned nothing listens and every connection the server took is closed.</summary>
    [Theory]
    [MemberData(nameof(Pairs))]
    public async Task TwoLifecycleCalls_InAnyOrderOrAtOnce_NeitherHangNorLeaveAnythingOpen(string first, string second, bool atOnce)
    {
        for (int round = 0; round < (atOnce ? 20 : 1); round++)
        {
            await using var run = new LifecycleRun();
            if (atOnce)
            {
                using var go = new ManualResetEventSlim();
                Task a = Task.Run(() =>
                {
                    go.Wait();
                    return run.CallAsync(first);
                });
                Task b = Task.Run(() =>
                {
                    go.Wait();
                    return run.CallAsync(second);
                });
                go.Set();
                await Task.WhenAll(a, b).WaitAsync(TestHost.Patience);
            }
            else
            {
                await run.CallAsync(first).WaitAsync(TestHost.Patience);
                await run.CallAsync(second).WaitAsync(TestHost.Patience);
            }

            await run.AssertNothingLeftAfterDisposalAsync();
        }
    }

    /// <summary>One server, the calls made on it, and what each left behind.</summary>
    private sealed class LifecycleRun : IAsyncDisposable
    {
        private readonly MuxServer _server;
        private readonly List<PipeReader> _accepted = [];
        private readonly Lock _gate = new();
        private volatile bool _stopCalled;
        private int? _port;

        public LifecycleRun()
        {
            _server = new MuxServer(new MuxServerOptions { EndPoint = new IPEndPoint(IPAddress.Loopback, 0) });
            _server.AddService<ITestService>(new TestService());
        }

        public async Task CallAsync(string operation)
        {
            var toServer = new Pipe();
            var toClient = new Pipe();
            try
            {
                switch (operation)
                {
                    case "Start":
                        await _server.StartAsync();
                        _port = ((IPEndPoint)_server.LocalEndPoint!).Port;
                        break;
                    case "Accept":
                        _server.Accept(new PipePair(toServer.Reader, toClient.Writer));
                        Served(toClient.Reader);
                        break;
                    case "AcceptAsync":
                        await _server.AcceptAsync(new DuplexStream(toServer.Reader.AsStream(), toClient.Writer.AsStream()));
                        Served(toClient.Reader);
                        break;
                    case "Stop":
                        _stopCalled = true;
                        await _server.StopAsync();
                        break;
                    default:
                        _stopCalled = true;
                        await _server.DisposeAsync();
                        break;
                }
            }
            catch (ObjectDisposedException refused) when (operation is "Start" or "Accept" or "AcceptAsync" && _stopCalled)
            {
                Assert.Equal(nameof(MuxServer), refused.ObjectName);
            }
            catch (InvalidOperationException refused) when (operation == "Start" && refused.GetType() == typeof(InvalidOperationException))
            {
                Assert.Contains("already been started", refused.Message, StringComparison.Ordinal);
            }
        }

        public async Task AssertNothingLeftAfterDisposalAsync()
        {
            await _server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            Assert.False(_server.IsListening);
            Assert.Equal(0, _server.ActiveConnections);
            if (_port is { } port)
            {
                using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
                var error = await Assert.ThrowsAsync<SocketException>(() => socket.ConnectAsync(IPAddress.Loopback, port).WaitAsync(TestHost.Patience));
                Assert.Equal(SocketError.ConnectionRefused, error.SocketErrorCode);
            }

            PipeReader[] accepted;
            lock (_gate)
            {
                accepted = [.. _accepted];
            }

            foreach (PipeReader reader in accepted)
            {
                // The server has ended its side of every connection it took.
                while (true)
                {
                    ReadResult result = await reader.ReadAsync().AsTask().WaitAsync(TestHost.Patience);
                    reader.AdvanceTo(result.Buffer.End);
                    if (result.IsCompleted)
                    {
                        break;
                    }
                }
            }
        }

        public async ValueTask DisposeAsync() => await _server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);

        private void Served(PipeReader fromServer)
        {
            lock (_gate)
            {
                _accepted.Add(fromServer);
            }
        }
    }

    private sealed class PipePair(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
