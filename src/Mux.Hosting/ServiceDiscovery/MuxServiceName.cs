namespace Mux.Hosting.ServiceDiscovery;

/// <summary>
/// A parsed <see cref="MuxClientOptions.Service"/>: <c>mux://users</c> for plaintext instances,
/// <c>muxs://users</c> for TLS ones, with an optional default port (<c>mux://users:5000</c>).
/// </summary>
/// <remarks>
/// The scheme doubles as service discovery's endpoint name: <c>mux://users</c> reads the
/// configuration section <c>Services:users:mux</c>, <c>muxs://users</c> reads <c>Services:users:muxs</c>.
/// Service discovery reads <c>a+b://</c> as "endpoints of scheme a, else b"; Mux refuses such a list
/// because <c>muxs+mux://</c> would quietly fall back from TLS to plaintext, and names that mean
/// "TLS" by a second scheme (<c>mux+tls://</c>) would be read by service discovery as that fallback.
/// </remarks>
internal sealed class MuxServiceName
{
    /// <summary>The plaintext scheme.</summary>
    public const string PlainScheme = "mux";

    /// <summary>The TLS scheme (like https and wss beside http and ws).</summary>
    public const string TlsScheme = "muxs";

    private MuxServiceName(string text, string scheme, string host, int port)
    {
        Text = text;
        Scheme = scheme;
        Host = host;
        Port = port;
    }

    /// <summary>The name as given, which is also the query passed to service discovery.</summary>
    public string Text { get; }

    /// <summary><see cref="PlainScheme"/> or <see cref="TlsScheme"/>, lower case.</summary>
    public string Scheme { get; }

    /// <summary>The service's name, for example <c>users</c> (service discovery's configuration key,
    /// and the TLS target host unless one is set).</summary>
    public string Host { get; }

    /// <summary>The port given in the name, used for instances found without one; 0 when none was given.</summary>
    public int Port { get; }

    public bool IsTls => Scheme == TlsScheme;

    /// <summary>Parses <paramref name="value"/>.</summary>
    /// <param name="value">For example <c>mux://users</c>, <c>muxs://users</c> or <c>mux://users:5000</c>.</param>
    /// <param name="source">Where the value came from, for the error message.</param>
    /// <exception cref="InvalidOperationException">It is not one of those forms.</exception>
    public static MuxServiceName Parse(string value, string source)
    {
        string text = value.Trim();
        int separator = text.IndexOf("://", StringComparison.Ordinal);
        if (separator > 0 && text.AsSpan(0, separator).Contains('+'))
        {
            throw Invalid(value, source, "one scheme, not a list: Mux does not fall back from one scheme to another (muxs+mux:// would quietly drop TLS)");
        }

        if (!Uri.TryCreate(text, UriKind.Absolute, out Uri? uri)
            || (uri.Scheme != PlainScheme && uri.Scheme != TlsScheme)
            || uri.Host.Length == 0
            || uri.AbsolutePath is not ("" or "/")
            || uri.Query.Length > 0
            || uri.Fragment.Length > 0
            || uri.UserInfo.Length > 0)
        {
            throw Invalid(value, source, "mux://NAME for plaintext instances or muxs://NAME for TLS ones, optionally with a default port (mux://users:5000)");
        }

        return new MuxServiceName(text, uri.Scheme, uri.Host, uri.IsDefaultPort ? 0 : uri.Port);
    }

    private static InvalidOperationException Invalid(string value, string source, string expected) =>
        new($"{source} is '{value}'; it must be {expected}.");
}
