using System.Net;
using System.Net.Security;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Tests.Security;

/// <summary>Self-signed certificates made in the test process (nothing from the machine's stores).</summary>
public static class TestCertificates
{
    private static readonly Lazy<X509Certificate2> s_server = new(() => Create("CN=localhost", serverAuth: true));
    private static readonly Lazy<X509Certificate2> s_client = new(() => Create("CN=mux-test-client", serverAuth: false));

    /// <summary>A server certificate for "localhost" and 127.0.0.1, with its private key.</summary>
    public static X509Certificate2 Server => s_server.Value;

    /// <summary>A client certificate, with its private key.</summary>
    public static X509Certificate2 Client => s_client.Value;

    public static X509Certificate2 Create(string subject, bool serverAuth)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: false, hasPathLengthConstraint: false, pathLengthConstraint: 0, critical: true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature, critical: true));
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension(
            [serverAuth ? new Oid("1.3.6.1.5.5.7.3.1") : new Oid("1.3.6.1.5.5.7.3.2")],
            critical: false));
        if (serverAuth)
        {
            var names = new SubjectAlternativeNameBuilder();
            names.AddDnsName("localhost");
            names.AddIpAddress(IPAddress.Loopback);
            request.CertificateExtensions.Add(names.Build());
        }

        using X509Certificate2 created = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(1));

        // A PKCS#12 round trip gives a certificate whose key every platform's TLS stack can use.
        return X509CertificateLoader.LoadPkcs12(created.Export(X509ContentType.Pfx), password: null);
    }

    /// <summary>Server options with <see cref="Server"/>.</summary>
    public static SslServerAuthenticationOptions ServerTls() => new() { ServerCertificate = Server };

    /// <summary>Client options that trust <paramref name="certificate"/> (default: <see cref="Server"/>) as a
    /// root, the way a private CA is trusted: by chain building, not by switching checks off.</summary>
    public static SslClientAuthenticationOptions ClientTlsTrusting(X509Certificate2? certificate = null, string targetHost = "localhost")
    {
        var policy = new X509ChainPolicy
        {
            TrustMode = X509ChainTrustMode.CustomRootTrust,
            RevocationMode = X509RevocationMode.NoCheck,
        };
        policy.CustomTrustStore.Add(certificate ?? Server);
        return new SslClientAuthenticationOptions { TargetHost = targetHost, CertificateChainPolicy = policy };
    }
}
