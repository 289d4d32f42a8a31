using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Mux.Hosting;

/// <summary>Loads the certificate a <see cref="MuxCertificateConfiguration"/> names, with errors that
/// name the configuration key and say what to fix.</summary>
internal static class CertificateLoader
{
    /// <summary>Loads the certificate; <paramref name="key"/> is the section's path for messages ("Mux:Server:Tls:Certificate"),
    /// and relative paths are relative to <paramref name="contentRoot"/>, or to the current directory when it is null.</summary>
    /// <exception cref="InvalidOperationException">The section names no certificate, or it cannot be loaded.</exception>
    public static X509Certificate2 Load(MuxCertificateConfiguration configuration, string key, string? contentRoot)
    {
        if (configuration.Path is not null && configuration.Subject is not null)
        {
            throw new InvalidOperationException($"{key} sets both Path and Subject; set Path (a file) or Subject (a certificate store), not both.");
        }

        if (configuration.Path is not null)
        {
            return LoadFile(configuration, key, contentRoot);
        }

        if (configuration.Subject is not null)
        {
            return LoadFromStore(configuration, key);
        }

        throw new InvalidOperationException(
            $"{key} names no certificate. Set {key}:Path (and Password, or KeyPath for PEM) or {key}:Subject (with Store and Location).");
    }

    private static X509Certificate2 LoadFile(MuxCertificateConfiguration configuration, string key, string? contentRoot)
    {
        string path = Resolve(configuration.Path!, contentRoot);
        string? keyPath = configuration.KeyPath is null ? null : Resolve(configuration.KeyPath, contentRoot);
        if (!File.Exists(path))
        {
            throw new InvalidOperationException($"{key}:Path is '{configuration.Path}', but there is no file at {path}.");
        }

        if (keyPath is not null && !File.Exists(keyPath))
        {
            throw new InvalidOperationException($"{key}:KeyPath is '{configuration.KeyPath}', but there is no file at {keyPath}.");
        }

        bool pem = keyPath is not null || IsPem(path);
        try
        {
            X509Certificate2 certificate = pem
                ? LoadPem(path, keyPath, configuration.Password)
                : X509CertificateLoader.LoadPkcs12FromFile(path, configuration.Password);
            if (!certificate.HasPrivateKey)
            {
                certificate.Dispose();
                throw new InvalidOperationException(
                    $"The certificate in {path} ({key}:Path) has no private key. " +
                    $"Use a PKCS#12 file that includes it, or set {key}:KeyPath to the PEM key.");
            }

            return certificate;
        }
        catch (CryptographicException ex)
        {
            string alsoCheck = keyPath is not null ? $" and {key}:KeyPath"
                : pem ? $", or set {key}:KeyPath if the key is not in the certificate's file"
                : string.Empty;
            throw new InvalidOperationException(
                $"The certificate {path} ({key}:Path) could not be loaded: {ex.Message} Check {key}:Password{alsoCheck}.", ex);
        }
    }

    private static X509Certificate2 LoadPem(string path, string? keyPath, string? password)
    {
        X509Certificate2 certificate = password is null
            ? X509Certificate2.CreateFromPemFile(path, keyPath)
            : X509Certificate2.CreateFromEncryptedPemFile(path, password, keyPath);
        if (!OperatingSystem.IsWindows())
        {
            return certificate;
        }

        // Windows' TLS stack cannot use a key that lives only in memory; a PKCS#12 round trip stores it.
        using (certificate)
        {
            return X509CertificateLoader.LoadPkcs12(certificate.Export(X509ContentType.Pkcs12), password: null);
        }
    }

    private static bool IsPem(string path)
    {
        string extension = System.IO.Path.GetExtension(path);
        return extension.Equals(".pem", StringComparison.OrdinalIgnoreCase) || extension.Equals(".crt", StringComparison.OrdinalIgnoreCase);
    }

    private static string Resolve(string path, string? contentRoot) =>
        contentRoot is null || System.IO.Path.IsPathRooted(path)
            ? System.IO.Path.GetFullPath(path)
            : System.IO.Path.GetFullPath(System.IO.Path.Combine(contentRoot, path));

    private static X509Certificate2 LoadFromStore(MuxCertificateConfiguration configuration, string key)
    {
        StoreLocation location = StoreLocation.CurrentUser;
        // Enum.TryParse also takes a number, which X509Store refuses with a message that names no key.
        if (configuration.Location is not null
            && (!Enum.TryParse(configuration.Location, ignoreCase: true, out location) || !Enum.IsDefined(location)))
        {
            throw new InvalidOperationException($"{key}:Location is '{configuration.Location}'; it must be CurrentUser or LocalMachine.");
        }

        string storeName = configuration.Store ?? "My";
        bool allowInvalid = configuration.AllowInvalid ?? false;
        using var store = new X509Store(storeName, location);
        try
        {
            store.Open(OpenFlags.ReadOnly | OpenFlags.OpenExistingOnly);
        }
        catch (CryptographicException ex)
        {
            throw new InvalidOperationException(
                $"The certificate store {location}/{storeName} ({key}:Location, {key}:Store) could not be opened: {ex.Message}", ex);
        }

        X509Certificate2Collection found = store.Certificates.Find(
            X509FindType.FindBySubjectName, configuration.Subject!, validOnly: !allowInvalid);
        // Of several certificates, the one that expires last. Without AllowInvalid, Find has already dropped every one
        // whose chain does not build, which includes one outside its validity period, so no clock is read here.
        X509Certificate2? best = null;
        foreach (X509Certificate2 candidate in found)
        {
            if (candidate.HasPrivateKey && (best is null || candidate.NotAfter > best.NotAfter))
            {
                best = candidate;
            }
        }

        foreach (X509Certificate2 candidate in found)
        {
            if (!ReferenceEquals(candidate, best))
            {
                candidate.Dispose();
            }
        }

        return best ?? throw new InvalidOperationException(
            $"No certificate with a private key and the subject '{configuration.Subject}' ({key}:Subject) was found in {location}/{storeName}" +
            (allowInvalid
                ? string.Empty
                : $" that is currently valid and trusted (set {key}:AllowInvalid to true for a self-signed or expired one)") + ".");
    }
}
