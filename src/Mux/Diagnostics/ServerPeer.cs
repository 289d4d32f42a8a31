using System.Net;

namespace Mux.Diagnostics;

/// <summary>Computed once per connection, the port boxed once.</summary>

internal sealed class ServerPeer
{
    private ServerPeer(string address, int port)
    {
        Address = address;
        Port = port;
    }

    public string Address { get; }

    public object Port { get; }

    /// <summary>Null when <paramref name="endPoint"/> has no host and port.</summary>
    public static ServerPeer? From(EndPoint? endPoint) => endPoint switch
    {
        IPEndPoint ip => new ServerPeer(ip.Address.ToString(), ip.Port),
        DnsEndPoint dns => new ServerPeer(dns.Host, dns.Port),
        _ => null,
    };
}
