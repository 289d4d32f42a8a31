namespace Mux.Hosting;

/// <summary>
/// Where a certificate comes from, the way Kestrel's "Certificates" sections say it: a file
/// (<see cref="Path"/>: PKCS#12 with <see cref="Password"/>, or PEM with <see cref="KeyPath"/>), or a
/// certificate store (<see cref="Subject"/>, <see cref="Store"/>, <see cref="Location"/>).
/// </summary>
internal sealed class MuxCertificateConfiguration
{
    /// <summary>A .pfx/.p12 file, or a PEM certificate (.pem/.crt) whose key is in <see cref="KeyPath"/>
    /// or in the same file. Relative paths are relative to the host's content root.</summary>
    public string? Path { get; set; }

    /// <summary>The PEM private key of a PEM certificate.</summary>
    public string? KeyPath { get; set; }

    /// <summary>The password of the PKCS#12 file or of the encrypted PEM key.</summary>
    public string? Password { get; set; }

    /// <summary>The subject name to find in <see cref="Store"/> (a substring match, as Kestrel does).</summary>
    public string? Subject { get; set; }

    /// <summary>The store name, for example "My" (the default) or "Root".</summary>
    public string? Store { get; set; }

    /// <summary>"CurrentUser" (the default) or "LocalMachine".</summary>
    public string? Location { get; set; }

    /// <summary>Whether a store certificate that is expired or not trusted may be used. Defaults to false.</summary>
    public bool? AllowInvalid { get; set; }
}

/// <summary>The keys of the "Mux:Server:Tls" section.</summary>
internal sealed class MuxServerTlsConfiguration
{
    /// <summary>The server's certificate; setting it turns TLS on.</summary>
    public MuxCertificateConfiguration? Certificate { get; set; }

    /// <summary>Whether clients must present a certificate (checked against the machine's trust
    /// unless a RemoteCertificateValidationCallback is set in code). Defaults to false.</summary>
    public bool? ClientCertificateRequired { get; set; }
}

/// <summary>The keys of the "Mux:Client:Tls" section. Any key turns TLS on unless
/// <see cref="Enabled"/> is false.</summary>
internal sealed class MuxClientTlsConfiguration
{
    /// <summary>Turns TLS on or off. Defaults to true when the section has any key.</summary>
    public bool? Enabled { get; set; }

    /// <summary>The name on the server's certificate. Defaults to the host of Mux:Client:Connect.</summary>
    public string? TargetHost { get; set; }

    /// <summary>A client certificate, for servers that ask for one.</summary>
    public MuxCertificateConfiguration? Certificate { get; set; }
}
