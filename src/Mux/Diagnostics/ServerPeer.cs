using System.Net;

namespace Mux.Diagnostics;

/// <summary>
/// The server.address and server.port tags of a client's spans, computed once per connection
/// (the port boxed once, not per call).
/// </summary>
internal sealed class ServerPeer
{
    private ServerPeer(string address, int port)
    {
        Address = address;
        Port = port;
    }

    public string Address { get; }

    /// <summary>The port, boxed once for the span tag.</summary>
    public object Port { get; }

    /// <summary>The peer of a connection to <paramref name="endPoint"/>; null when it has no host and port.</summary>
    public static ServerPeer? From(EndPoint? endPoint) => endPoint switch
    {
        IPEndPoint ip => new ServerPeer(ip.Address.ToString(), ip.Port),
        DnsEndPoint dns => new ServerPeer(dns.Host, dns.Port),
        _ => null,
    };
}
