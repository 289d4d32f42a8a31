using System.Net.Security;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using Mux.Tests.Security;

namespace Mux.Hosting.Tests;

public sealed class TlsConfigurationTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("mux-tls-config-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    private string WritePfx(X509Certificate2 certificate, string password)
    {
        string path = Path.Combine(_directory, "server.pfx");
        File.WriteAllBytes(path, certificate.Export(X509ContentType.Pkcs12, password));
        return path;
    }

    private static T Options<T>(Dictionary<string, string?> configuration)
        where T : class
    {
        (HostApplicationBuilder builder, _) = TestHost.CreateBuilder(configuration);
        builder.Services.AddMuxServer();
        builder.Services.AddMuxClient();
        using IHost host = builder.Build();
        return host.Services.GetRequiredService<IOptions<T>>().Value;
    }

    [Fact]
    public void AServerCertificate_IsLoadedFromAPkcs12FileAndItsPassword()
    {
        string path = WritePfx(TestCertificates.Server, "pa55word");

        MuxServerOptions options = Options<MuxServerOptions>(new()
        {
            ["Mux:Server:Tls:Certificate:Path"] = path,
            ["Mux:Server:Tls:Certificate:Password"] = "pa55word",
            ["Mux:Server:Tls:ClientCertificateRequired"] = "true",
        });

        var certificate = Assert.IsType<X509Certificate2>(options.Tls?.ServerCertificate);
        Assert.Equal(TestCertificates.Server.Thumbprint, certificate.Thumbprint);
        Assert.True(certificate.HasPrivateKey);
        Assert.True(options.Tls!.ClientCertificateRequired);
    }

    [Fact]
    public void AServerCertificate_IsLoadedFromPemCertificateAndKeyFiles()
    {
        X509Certificate2 source = TestCertificates.Server;
        string certificatePath = Path.Combine(_directory, "server.pem");
        string keyPath = Path.Combine(_directory, "server.key");
        File.WriteAllText(certificatePath, source.ExportCertificatePem());
        using (ECDsa key = source.GetECDsaPrivateKey()!)
        {
            File.WriteAllText(keyPath, key.ExportPkcs8PrivateKeyPem());
        }

        MuxServerOptions options = Options<MuxServerOptions>(new()
        {
            ["Mux:Server:Tls:Certificate:Path"] = certificatePath,
            ["Mux:Server:Tls:Certificate:KeyPath"] = keyPath,
        });

        var certificate = Assert.IsType<X509Certificate2>(options.Tls?.ServerCertificate);
        Assert.Equal(source.Thumbprint, certificate.Thumbprint);
        Assert.True(certificate.HasPrivateKey);
    }

    [Fact]
    public void AServerCertificate_IsFoundInTheCertificateStoreBySubject()
    {
        string subject = "mux-config-test-" + Guid.NewGuid().ToString("N");
        using X509Certificate2 created = TestCertificates.Create("CN=" + subject, serverAuth: true);
        using var store = new X509Store(StoreName.My, StoreLocation.CurrentUser);
        store.Open(OpenFlags.ReadWrite);
        store.Add(created);
        try
        {
            MuxServerOptions options = Options<MuxServerOptions>(new()
            {
                ["Mux:Server:Tls:Certificate:Subject"] = subject,
                ["Mux:Server:Tls:Certificate:Store"] = "My",
                ["Mux:Server:Tls:Certificate:Location"] = "CurrentUser",
                ["Mux:Server:Tls:Certificate:AllowInvalid"] = "true", // Self-signed: not trusted by the machine.
            });

            var certificate = Assert.IsType<X509Certificate2>(options.Tls?.ServerCertificate);
            Assert.Equal(created.Thumbprint, certificate.Thumbprint);
            Assert.True(certificate.HasPrivateKey);
        }
        finally
        {
            store.Remove(created);
        }
    }

    [Fact]
    public void AStoreCertificateThatIsNotTrusted_IsNotUsedUnlessAllowInvalidIsSet()
    {
        string subject = "mux-config-test-" + Guid.NewGuid().ToString("N");
        using X509Certificate2 created = TestCertificates.Create("CN=" + subject, serverAuth: true);
        using var store = new X509Store(StoreName.My, StoreLocation.CurrentUser);
        store.Open(OpenFlags.ReadWrite);
        store.Add(created);
        try
        {
            var error = Assert.Throws<InvalidOperationException>(() => Options<MuxServerOptions>(new()
            {
                ["Mux:Server:Tls:Certificate:Subject"] = subject,
            }));

            Assert.Contains(subject, error.Message, StringComparison.Ordinal);
            Assert.Contains("Mux:Server:Tls:Certificate:AllowInvalid", error.Message, StringComparison.Ordinal);
        }
        finally
        {
            store.Remove(created);
        }
    }

    [Fact]
    public void AMissingCertificateFile_FailsWithAMessageThatNamesTheKey()
    {
        string path = Path.Combine(_directory, "absent.pfx");

        var error = Assert.Throws<InvalidOperationException>(() => Options<MuxServerOptions>(new() { ["Mux:Server:Tls:Certificate:Path"] = path }));

        Assert.Contains("Mux:Server:Tls:Certificate:Path", error.Message, StringComparison.Ordinal);
        Assert.Contains(path, error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("Office")]
    [InlineData("7")] // Enum.TryParse takes any number; the old code failed in X509Store with an ArgumentException naming no key.
    public void AStoreLocationThatIsNeitherCurrentUserNorLocalMachine_FailsWithAMessageThatNamesTheKey(string location)
    {
        var error = Assert.Throws<InvalidOperationException>(() => Options<MuxServerOptions>(new()
        {
            ["Mux:Server:Tls:Certificate:Subject"] = "localhost",
            ["Mux:Server:Tls:Certificate:Location"] = location,
        }));

        Assert.Contains($"Mux:Server:Tls:Certificate:Location is '{location}'", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void APemCertificateWithoutItsKey_FailsWithAMessageThatPointsAtKeyPath()
    {
        string certificatePath = Path.Combine(_directory, "server.pem");
        File.WriteAllText(certificatePath, TestCertificates.Server.ExportCertificatePem());

        var error = Assert.Throws<InvalidOperationException>(() => Options<MuxServerOptions>(new() { ["Mux:Server:Tls:Certificate:Path"] = certificatePath }));

        // The old message said only to check the Password, which a PEM key without one does not need.
        Assert.Contains("Mux:Server:Tls:Certificate:KeyPath", error.Message, StringComparison.Ordinal);
        Assert.IsAssignableFrom<CryptographicException>(error.InnerException);
    }

    [Fact]
    public void AWrongPassword_FailsWithAMessageThatSaysToCheckIt()
    {
        string path = WritePfx(TestCertificates.Server, "right");

        var error = Assert.Throws<InvalidOperationException>(() => Options<MuxServerOptions>(new()
        {
            ["Mux:Server:Tls:Certificate:Path"] = path,
            ["Mux:Server:Tls:Certificate:Password"] = "wrong",
        }));

        Assert.Contains("Mux:Server:Tls:Certificate:Password", error.Message, StringComparison.Ordinal);
        Assert.IsAssignableFrom<CryptographicException>(error.InnerException);
    }

    [Fact]
    public void ATlsSectionWithoutACertificate_FailsWithAMessageThatSaysWhatToSet()
    {
        var error = Assert.Throws<InvalidOperationException>(() => Options<MuxServerOptions>(new() { ["Mux:Server:Tls:ClientCertificateRequired"] = "true" }));

        Assert.Contains("Mux:Server:Tls:Certificate:Path", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ClientTls_IsTurnedOnByItsSection_AndOffByEnabledFalse()
    {
        MuxClientOptions on = Options<MuxClientOptions>(new() { ["Mux:Client:Tls:TargetHost"] = "users.internal" });
        MuxClientOptions off = Options<MuxClientOptions>(new() { ["Mux:Client:Tls:Enabled"] = "false", ["Mux:Client:Tls:TargetHost"] = "users.internal" });
        MuxClientOptions none = Options<MuxClientOptions>([]);

        Assert.Equal("users.internal", on.Tls?.TargetHost);
        Assert.Null(off.Tls);
        Assert.Null(none.Tls);
    }

    [Fact]
    public void DetailedErrors_AreBoundFromConfiguration_AndOffByDefault()
    {
        Assert.True(Options<MuxServerOptions>(new() { ["Mux:Server:EnableDetailedErrors"] = "true" }).EnableDetailedErrors);
        Assert.False(Options<MuxServerOptions>([]).EnableDetailedErrors);
    }

    [Fact]
    public async Task HostsConfiguredForTls_CallEachOtherOverTls()
    {
        string path = WritePfx(TestCertificates.Server, "pa55word");
        await using TestHost server = await TestHost.StartServerAsync(configuration: new()
        {
            ["Mux:Server:Tls:Certificate:Path"] = path,
            ["Mux:Server:Tls:Certificate:Password"] = "pa55word",
        });
        await using TestHost client = await TestHost.StartClientAsync(
            server.ServerEndPoint,
            new() { ["Mux:Client:Tls:TargetHost"] = "localhost" },
            b => b.Services.AddMuxClient(o => o.Tls!.CertificateChainPolicy = TestCertificates.ClientTlsTrusting().CertificateChainPolicy));

        Assert.Equal(5, await client.Services.GetRequiredService<IHostingTestService>().Add(2, 3).AsTask().WaitAsync(TestHost.Patience));

        // A client without TLS is not served by this server.
        await Assert.ThrowsAsync<MuxConnectionException>(() => MuxClient.ConnectAsync(server.ServerEndPoint, new MuxClientOptions { ConnectTimeout = TimeSpan.FromSeconds(5) }).WaitAsync(TestHost.Patience));
    }
}
