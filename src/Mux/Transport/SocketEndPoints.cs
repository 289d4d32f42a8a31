using System.Net;
using System.Net.Sockets;

namespace Mux.Transport;

internal static class SocketEndPoints
{
    public static Socket CreateSocket(EndPoint endPoint) => endPoint switch
    {
        // Unix domain sockets have no protocol number; asking for TCP fails with "Protocol not supported".
        UnixDomainSocketEndPoint => new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified),

        // A dual-mode socket, so the name may resolve to IPv4 or IPv6.
        DnsEndPoint => new Socket(SocketType.Stream, ProtocolType.Tcp),
        _ => new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp),
    };

    /// <summary>Where a secret sent in plaintext can be read; a Unix domain socket never leaves the machine.</summary>
    public static bool CrossesNetwork(EndPoint endPoint) => endPoint is IPEndPoint or DnsEndPoint;

    /// <summary>Used when the options name no TargetHost.</summary>
    public static string? TlsTargetHost(EndPoint endPoint) => endPoint switch
    {
        DnsEndPoint dns => dns.Host,
        IPEndPoint ip => ip.Address.ToString(),
        _ => null,
    };

    /// <summary>Null for other endpoints and abstract sockets, which have no file.</summary>

    public static string? UnixSocketFile(EndPoint? endPoint)
    {
        if (endPoint is not UnixDomainSocketEndPoint)
        {
            return null;
        }

        string path = endPoint.ToString() ?? string.Empty;
        return path.Length == 0 || path[0] == '\0' || path[0] == '@' ? null : path;
    }
}
