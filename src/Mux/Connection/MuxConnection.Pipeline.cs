using System.Security.Claims;
using Mux.Protocol;

namespace Mux.Connection;

// The call pipeline's part of a connection (issue 25): who is at the other end (MuxCallContext.User
// and Connection) and the metadata limits of both sides.
internal abstract partial class MuxConnection
{
    // What this side knows of its peer, and the user its served calls run as. A server sets both in
    // its handshake, before it accepts any call (a call's handler reads them only after); a client
    // makes them on first use. Written once.
    private MuxConnectionInfo? _peerInfo;
    private ClaimsPrincipal? _peerUser;

    /// <summary>The largest metadata section (map bytes) this side accepts in a Request it serves,
    /// announced in its handshake. Set by the subclass's constructor; immutable after.</summary>
    public int MaxMetadataSize { get; protected init; } = MetadataSection.DefaultMaxSize;

    /// <summary>The largest metadata section the peer accepts; 0 when its handshake did not announce
    /// one, which means it reads none (an earlier build): it is then sent no metadata. Set from the
    /// peer's handshake before any call.</summary>
    public int PeerMaxMetadataSize { get; private set; }

    /// <summary>What this side knows of its peer (MuxCallContext.Connection).</summary>
    public MuxConnectionInfo PeerInfo =>
        Volatile.Read(ref _peerInfo) ?? Interlocked.CompareExchange(ref _peerInfo, new MuxConnectionInfo(_transport.RemoteEndPoint, null, null), null) ?? _peerInfo!;

    /// <summary>The user the peer's calls run as (MuxCallContext.User): what the server's Authenticate
    /// returned, else an anonymous user (no identity is authenticated).</summary>
    public ClaimsPrincipal PeerUser =>
        Volatile.Read(ref _peerUser) ?? Interlocked.CompareExchange(ref _peerUser, new ClaimsPrincipal(new ClaimsIdentity()), null) ?? _peerUser!;

    /// <summary>The certificate the peer presented in the TLS handshake, if any.</summary>
    protected System.Security.Cryptography.X509Certificates.X509Certificate2? PeerCertificate => _transport.RemoteCertificate;

    /// <summary>The peer's socket address, if any.</summary>
    protected System.Net.EndPoint? PeerEndPoint => _transport.RemoteEndPoint;

    /// <summary>Records who the peer is: once, in the handshake, before any call is served.</summary>
    protected void SetPeer(MuxConnectionInfo info, ClaimsPrincipal? user)
    {
        Volatile.Write(ref _peerInfo, info);
        if (user is not null)
        {
            Volatile.Write(ref _peerUser, user);
        }
    }
}
