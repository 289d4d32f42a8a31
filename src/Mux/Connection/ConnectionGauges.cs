using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using Mux.Diagnostics;

namespace Mux.Connection;

/// <summary>
/// Observable instruments read from the live connections when a listener collects, so calls and frames pay nothing, and
/// a listener that starts late still sees the true values.
/// </summary>

internal static class ConnectionGauges
{
    private const string SideTag = "mux.side";

    // Every connection between its start and its close; the instruments' callbacks enumerate it while it changes.
    private static readonly ConcurrentDictionary<MuxConnection, byte> s_open = new();

    private static readonly KeyValuePair<string, object?> s_client = new(SideTag, "client");
    private static readonly KeyValuePair<string, object?> s_server = new(SideTag, "server");

    static ConnectionGauges()
    {
        MuxTelemetry.Meter.CreateObservableUpDownCounter(
            "mux.client.active_connections", () => ByServer(calls: false), "{connection}",
            "Open client connections, by server.address and server.port.");
        MuxTelemetry.Meter.CreateObservableUpDownCounter(
            "mux.server.active_connections", () => ServerTotal(calls: false), "{connection}", "Open server connections.");
        MuxTelemetry.Meter.CreateObservableUpDownCounter(
            "mux.client.active_calls", () => ByServer(calls: true), "{call}",
            "Calls sent and waiting for their response, by server.address and server.port.");
        MuxTelemetry.Meter.CreateObservableUpDownCounter("mux.server.active_calls", () => ServerTotal(calls: true), "{call}", "Calls being served.");
        MuxTelemetry.Meter.CreateObservableUpDownCounter(
            "mux.outbound.queued_bytes", QueuedBytes, "By", "Bytes of frames waiting for the connection's writer, by side.");
    }

    public static void Opened(MuxConnection connection) => s_open.TryAdd(connection, 0);

    public static void Closed(MuxConnection connection) => s_open.TryRemove(connection, out _);

    private static int ServerTotal(bool calls)
    {
        int total = 0;
        foreach (MuxConnection connection in s_open.Keys)
        {
            if (connection.IsServer)
            {
                total += calls ? connection.Incoming.Count : 1;
            }
        }

        return total;
    }

    // Per server instance, so a client over several instances shows each one's load.
    private static IEnumerable<Measurement<int>> ByServer(bool calls)
    {
        var byServer = new Dictionary<(string? Address, object? Port), int>();
        foreach (MuxConnection connection in s_open.Keys)
        {
            if (!connection.IsServer)
            {
                (string? Address, object? Port) key = (connection.Outgoing.Peer?.Address, connection.Outgoing.Peer?.Port);
                byServer[key] = byServer.GetValueOrDefault(key) + (calls ? connection.Outgoing.Count : 1);
            }
        }

        var measurements = new List<Measurement<int>>(byServer.Count);
        foreach (((string? address, object? port), int value) in byServer)
        {
            measurements.Add(address is null
                ? new Measurement<int>(value)
                : new Measurement<int>(
                    value,
                    new KeyValuePair<string, object?>(RpcTags.ServerAddress, address),
                    new KeyValuePair<string, object?>(RpcTags.ServerPort, port)));
        }

        return measurements;
    }

    private static IEnumerable<Measurement<long>> QueuedBytes()
    {
        long client = 0;
        long server = 0;
        foreach (MuxConnection connection in s_open.Keys)
        {
            if (connection.IsServer)
            {
                server += connection.Outbound.QueuedBytes;
            }
            else
            {
                client += connection.Outbound.QueuedBytes;
            }
        }

        return [new Measurement<long>(client, s_client), new Measurement<long>(server, s_server)];
    }
}
