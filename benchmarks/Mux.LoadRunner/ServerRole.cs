using System.Net;
using System.Net.Security;
using Mux.LoadRunner.Peers;

namespace Mux.LoadRunner;

/// <summary>
/// The child process: one server of one system on 127.0.0.1. Prints "LISTENING &lt;port&gt;", then
/// reads stdin: "begin" and "end" mark the measured window, end of input stops the server.
/// </summary>
internal static class ServerRole
{
    /// <param name="bigPayloadMib">Set (with a Mux system), the server also serves the large-payload measurement
    /// (<see cref="IBigPayloadService"/>, a payload of that many MiB) and accepts its large frames and messages.</param>
    public static async Task<int> RunAsync(string system, int port, int? bigPayloadMib = null)
    {
        MuxServer? mux = null;
        MuxWebSocketServer? web = null;
        RawServer? raw = null;
        IPeerServer? peer = null;
        WindowMarks marks;
        int boundPort;
        if (system is BenchSystems.Mux or BenchSystems.MuxTls)
        {
            MuxServer? counted = null;
            marks = new WindowMarks(() => ConnectionCounters(counted));
            var serverOptions = new MuxServerOptions
            {
                EndPoint = new IPEndPoint(IPAddress.Loopback, port),
                ShutdownTimeout = TimeSpan.FromSeconds(2),
                Tls = system == BenchSystems.MuxTls ? new SslServerAuthenticationOptions { ServerCertificate = BenchCertificate.Create() } : null,
            };
            if (bigPayloadMib is { } mib)
            {
                serverOptions.MaxFrameSize = BigPayloadMeasurement.FrameSize;
                serverOptions.MaxMessageSize = BigPayloadMeasurement.MessageSize(mib);
            }

            mux = new MuxServer(PassThroughInterceptor.AddTo(serverOptions));
            MuxServer server = mux;
            counted = mux;
            if (bigPayloadMib is { } payloadMib)
            {
                mux.AddService<IBigPayloadService>(new BigPayloadService(BigPayloadMeasurement.Payload(payloadMib)));
            }

            mux.AddService<IBenchService>(new BenchService());
            mux.AddService<IBenchStreams>(new BenchStreams());
            mux.AddService<ISoakService>(new SoakService());
            mux.AddService<IBenchControl>(new BenchControl(marks, () => server.ConnectionsAccepted));
            await mux.StartAsync();
            boundPort = ((IPEndPoint)mux.LocalEndPoint!).Port;
        }
        else if (system == BenchSystems.MuxWebSocket)
        {
            MuxWebSocketServer? counted = null;
            marks = new WindowMarks(() => ConnectionCounters(counted?.Server));
            web = await MuxWebSocketServer.StartAsync(port, marks);
            counted = web;
            boundPort = web.Port;
        }
        else if (PeerSystems.IsPeer(system))
        {
            peer = await PeerSystems.StartServerAsync(system, port);
            marks = peer.Marks;
            boundPort = peer.Port;
        }
        else
        {
            raw = new RawServer(batched: system == BenchSystems.RawBatched, port);
            marks = raw.Marks;
            raw.Start();
            boundPort = raw.Port;
        }

        try
        {
            Console.Out.WriteLine($"LISTENING {boundPort}");
            Console.Out.Flush();

            // A plain thread reads stdin, so the marks are taken as soon as the line arrives.
            var stdinClosed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            var reader = new Thread(() =>
            {
                try
                {
                    string? line;
                    while ((line = Console.In.ReadLine()) is not null)
                    {
                        switch (line.Trim())
                        {
                            case "begin":
                                marks.Begin();
                                break;
                            case "end":
                                marks.End();
                                break;
                        }
                    }
                }
                catch (IOException)
                {
                    // The orchestrator went away: same as end of input.
                }

                stdinClosed.TrySetResult();
            })
            {
                IsBackground = true,
                Name = "stdin",
            };
            reader.Start();
            await stdinClosed.Task;
            return 0;
        }
        finally
        {
            if (mux is not null)
            {
                await mux.DisposeAsync();
            }

            if (web is not null)
            {
                await web.DisposeAsync();
            }

            if (raw is not null)
            {
                await raw.DisposeAsync();
            }

            if (peer is not null)
            {
                await peer.DisposeAsync();
            }
        }
    }

    /// <summary>
    /// The frame, socket and stage-clock counters of every connection the Mux server has open:
    /// during the window that is the load's one connection (the control connection that asks for
    /// the stats comes after "begin", so at most its handshake lands in "end"). A connection that
    /// closed between the marks would drop out of the sum; none does in a point.
    /// </summary>
    private static TransportCounters ConnectionCounters(MuxServer? server)
    {
        TransportCounters total = default;
        if (server is null)
        {
            return total;
        }

        foreach (Mux.Server.ServerConnection connection in server.Connections)
        {
            MuxConnectionStatistics stats = connection.GetStatistics();
            total += new TransportCounters(stats.FramesSent, stats.SocketSends, stats.FramesReceived, stats.SocketReceives, connection.GetStageTimes());
        }

        return total;
    }
}
