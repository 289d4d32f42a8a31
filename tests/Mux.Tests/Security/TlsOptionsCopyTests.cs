using System.Net.Security;
using System.Reflection;
using Mux.Transport;

namespace Mux.Tests.Security;

public sealed class TlsOptionsCopyTests
{
    // Mux hands SslStream a copy of the user's options (to add ALPN and a default target host without
    // modifying the user's object). These tests fail when .NET adds a property the copy does not carry.
    [Fact]
    public void TheClientOptionsCopy_CarriesEverySettableProperty()
    {
        string[] settable = typeof(SslClientAuthenticationOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .Where(p => p.CanWrite).Select(p => p.Name).Order().ToArray();

        Assert.Equal(
            ["AllowRenegotiation", "AllowRsaPkcs1Padding", "AllowRsaPssPadding", "AllowTlsResume", "ApplicationProtocols", "CertificateChainPolicy", "CertificateRevocationCheckMode", "CipherSuitesPolicy", "ClientCertificateContext", "ClientCertificates", "EnabledSslProtocols", "EncryptionPolicy", "LocalCertificateSelectionCallback", "RemoteCertificateValidationCallback", "TargetHost"],
            settable);
    }

    [Fact]
    public void TheServerOptionsCopy_CarriesEverySettableProperty()
    {
        string[] settable = typeof(SslServerAuthenticationOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .Where(p => p.CanWrite).Select(p => p.Name).Order().ToArray();

        Assert.Equal(
            ["AllowRenegotiation", "AllowRsaPkcs1Padding", "AllowRsaPssPadding", "AllowTlsResume", "ApplicationProtocols", "CertificateChainPolicy", "CertificateRevocationCheckMode", "CipherSuitesPolicy", "ClientCertificateRequired", "EnabledSslProtocols", "EncryptionPolicy", "RemoteCertificateValidationCallback", "ServerCertificate", "ServerCertificateContext", "ServerCertificateSelectionCallback"],
            settable);
    }

    [Fact]
    public void TheClientCopy_KeepsTheUsersValues_AndFillsOnlyAlpnAndTargetHost()
    {
        RemoteCertificateValidationCallback callback = (_, _, _, _) => true;
        var source = new SslClientAuthenticationOptions
        {
            AllowRenegotiation = false,
            AllowTlsResume = false,
            EnabledSslProtocols = System.Security.Authentication.SslProtocols.Tls13,
            CertificateRevocationCheckMode = System.Security.Cryptography.X509Certificates.X509RevocationMode.Offline,
            RemoteCertificateValidationCallback = callback,
        };

        SslClientAuthenticationOptions copy = TlsHandshake.CopyForMux(source, "127.0.0.1");

        Assert.False(copy.AllowRenegotiation);
        Assert.False(copy.AllowTlsResume);
        Assert.Equal(System.Security.Authentication.SslProtocols.Tls13, copy.EnabledSslProtocols);
        Assert.Equal(System.Security.Cryptography.X509Certificates.X509RevocationMode.Offline, copy.CertificateRevocationCheckMode);
        Assert.Same(callback, copy.RemoteCertificateValidationCallback);
        Assert.Equal("127.0.0.1", copy.TargetHost);
        Assert.Equal([new SslApplicationProtocol("mux/1")], copy.ApplicationProtocols);
        Assert.Null(source.ApplicationProtocols);
    }
}
