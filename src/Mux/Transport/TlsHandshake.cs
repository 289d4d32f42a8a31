using System.Net.Security;
using System.Security.Authentication;

namespace Mux.Transport;

/// <summary>
/// Both sides offer and require the ALPN protocol <c>mux/1</c>, so a peer of another protocol fails in the handshake
/// instead of receiving frames it cannot read. Each handshake uses a copy of the user's options.
/// </summary>
internal static class TlsHandshake
{
    public const string ProtocolName = "mux/1";

    public static readonly SslApplicationProtocol Protocol = new(ProtocolName);

    public static void ValidateClient(SslClientAuthenticationOptions tls) =>
        RequireMuxProtocol(tls.ApplicationProtocols, "MuxClientOptions", "offers");

    public static void ValidateServer(SslServerAuthenticationOptions tls)
    {
        if (tls.ServerCertificate is null && tls.ServerCertificateContext is null && tls.ServerCertificateSelectionCallback is null)
        {
            throw new InvalidOperationException(
                "MuxServerOptions.Tls has no certificate. Set Tls.ServerCertificate (an X509Certificate2 with its private key), " +
                "Tls.ServerCertificateContext or Tls.ServerCertificateSelectionCallback.");
        }

        if (tls.ServerCertificate is System.Security.Cryptography.X509Certificates.X509Certificate2 { HasPrivateKey: false } certificate)
        {
            throw new InvalidOperationException(
                $"MuxServerOptions.Tls.ServerCertificate ('{certificate.Subject}') has no private key. " +
                "Load it from a PFX/PKCS#12 file with its password, or from PEM with its key file.");
        }

        RequireMuxProtocol(tls.ApplicationProtocols, "MuxServerOptions", "requires");
    }

    private static void RequireMuxProtocol(List<SslApplicationProtocol>? protocols, string options, string whatMuxDoes)
    {
        if (protocols is not null && !protocols.Contains(Protocol))
        {
            throw new InvalidOperationException(
                $"{options}.Tls.ApplicationProtocols does not include \"{ProtocolName}\". " +
                $"Leave it null (Mux {whatMuxDoes} \"{ProtocolName}\") or add it to the list.");
        }
    }

    /// <summary>The returned stream owns <paramref name="inner"/> and disposes it if the handshake fails. The caller's
    /// cancellation surfaces as <see cref="OperationCanceledException"/>.</summary>
    /// <exception cref="MuxConnectionException">The handshake failed; the message says why, naming <paramref name="peerName"/>.</exception>
    public static async Task<SslStream> AuthenticateAsClientAsync(
        Stream inner, SslClientAuthenticationOptions configured, string? defaultTargetHost, string peerName, CancellationToken cancellationToken)
    {
        SslClientAuthenticationOptions options = CopyForMux(configured, defaultTargetHost);
        try
        {
            return await AuthenticateAsync(
                inner,
                ssl => ssl.AuthenticateAsClientAsync(options, cancellationToken),
                chosen => new MuxConnectionException(
                    $"The TLS server at {peerName} did not agree to the ALPN protocol \"{ProtocolName}\" (it chose \"{chosen}\"): " +
                    "it is not a Mux server, or not this protocol version.",
                    MuxCloseReason.ProtocolError,
                    null)).ConfigureAwait(false);
        }
        catch (AuthenticationException ex)
        {
            throw new MuxConnectionException(
                $"The TLS handshake with the Mux server at {peerName} failed: {ex.Message} Check that the server's certificate is " +
                $"trusted on this machine and issued for '{options.TargetHost}' (MuxClientOptions.Tls.TargetHost), or decide trust " +
                "yourself with MuxClientOptions.Tls.RemoteCertificateValidationCallback.",
                MuxCloseReason.ProtocolError,
                ex);
        }
        catch (IOException ex)
        {
            throw new MuxConnectionException(
                $"The Mux server at {peerName} closed the connection during the TLS handshake ({ex.Message}). Check that it " +
                $"serves TLS (MuxServerOptions.Tls) and accepts this client's certificate and ALPN \"{ProtocolName}\".",
                MuxCloseReason.TransportError,
                ex);
        }
    }

    /// <summary>Throws <see cref="AuthenticationException"/> (or the transport's exception), having disposed the stream,
    /// when the client fails the handshake or did not ask for <c>mux/1</c>.</summary>
    public static Task<SslStream> AuthenticateAsServerAsync(
        Stream inner, SslServerAuthenticationOptions configured, CancellationToken cancellationToken)
    {
        SslServerAuthenticationOptions options = CopyForMux(configured);

        // A client without ALPN fails here; one that offered only other protocols fails inside the handshake.
        return AuthenticateAsync(
            inner,
            ssl => ssl.AuthenticateAsServerAsync(options, cancellationToken),
            chosen => new AuthenticationException($"The client did not ask for the ALPN protocol \"{ProtocolName}\" (it negotiated \"{chosen}\")."));
    }

    /// <summary>The stream and <paramref name="inner"/> are disposed on failure.</summary>

    private static async Task<SslStream> AuthenticateAsync(Stream inner, Func<SslStream, Task> authenticate, Func<string, Exception> notMux)
    {
        var ssl = new SslStream(inner, leaveInnerStreamOpen: false);
        try
        {
            await authenticate(ssl).ConfigureAwait(false);
            SslApplicationProtocol chosen = ssl.NegotiatedApplicationProtocol;
            if (chosen != Protocol)
            {
                throw notMux(chosen.Protocol.IsEmpty ? "none" : chosen.ToString());
            }

            return ssl;
        }
        catch
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    // Every settable property is copied: a test compares them by reflection, so one a future .NET adds fails that test
    // rather than being dropped silently.
#pragma warning disable SYSLIB0040 // EncryptionPolicy is obsolete, but a user who set it must get it.
    internal static SslClientAuthenticationOptions CopyForMux(SslClientAuthenticationOptions source, string? defaultTargetHost)
    {
        var copy = new SslClientAuthenticationOptions
        {
            AllowRenegotiation = source.AllowRenegotiation,
            AllowTlsResume = source.AllowTlsResume,
            ApplicationProtocols = source.ApplicationProtocols ?? [Protocol],
            CertificateChainPolicy = source.CertificateChainPolicy,
            CertificateRevocationCheckMode = source.CertificateRevocationCheckMode,
            CipherSuitesPolicy = source.CipherSuitesPolicy,
            ClientCertificateContext = source.ClientCertificateContext,
            ClientCertificates = source.ClientCertificates,
            EnabledSslProtocols = source.EnabledSslProtocols,
            EncryptionPolicy = source.EncryptionPolicy,
            LocalCertificateSelectionCallback = source.LocalCertificateSelectionCallback,
            RemoteCertificateValidationCallback = source.RemoteCertificateValidationCallback,
            TargetHost = string.IsNullOrEmpty(source.TargetHost) ? defaultTargetHost : source.TargetHost,
        };
        if (OperatingSystem.IsLinux() || OperatingSystem.IsWindows())
        {
            copy.AllowRsaPkcs1Padding = source.AllowRsaPkcs1Padding;
            copy.AllowRsaPssPadding = source.AllowRsaPssPadding;
        }

        return copy;
    }

    internal static SslServerAuthenticationOptions CopyForMux(SslServerAuthenticationOptions source)
    {
        var copy = new SslServerAuthenticationOptions
        {
            AllowRenegotiation = source.AllowRenegotiation,
            AllowTlsResume = source.AllowTlsResume,
            ApplicationProtocols = source.ApplicationProtocols ?? [Protocol],
            CertificateChainPolicy = source.CertificateChainPolicy,
            CertificateRevocationCheckMode = source.CertificateRevocationCheckMode,
            CipherSuitesPolicy = source.CipherSuitesPolicy,
            ClientCertificateRequired = source.ClientCertificateRequired,
            EnabledSslProtocols = source.EnabledSslProtocols,
            EncryptionPolicy = source.EncryptionPolicy,
            RemoteCertificateValidationCallback = source.RemoteCertificateValidationCallback,
            ServerCertificate = source.ServerCertificate,
            ServerCertificateContext = source.ServerCertificateContext,
            ServerCertificateSelectionCallback = source.ServerCertificateSelectionCallback,
        };
        if (OperatingSystem.IsLinux() || OperatingSystem.IsWindows())
        {
            copy.AllowRsaPkcs1Padding = source.AllowRsaPkcs1Padding;
            copy.AllowRsaPssPadding = source.AllowRsaPssPadding;
        }

        return copy;
    }
#pragma warning restore SYSLIB0040
}
