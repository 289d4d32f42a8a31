using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Mux.LoadRunner;

/// <summary>A throwaway self-signed certificate for the mux-tls server (ECDSA P-256, as a real
/// deployment would likely use), made at start so the benchmark needs no files.</summary>
internal static class BenchCertificate
{
    public static X509Certificate2 Create()
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddDnsName("localhost");
        request.CertificateExtensions.Add(names.Build());
        using X509Certificate2 created = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(1));
        return X509CertificateLoader.LoadPkcs12(created.Export(X509ContentType.Pfx), password: null);
    }
}
