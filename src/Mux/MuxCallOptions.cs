namespace Mux;

/// <summary>
/// Settings for the calls of one proxy: <c>client.CreateProxy&lt;IUserService&gt;(new MuxCallOptions { ... })</c>.
/// Making such a proxy is cheap (it validates and encodes the options once), so make one per tenant, per request, or
/// wherever the settings change. The proxy takes a copy: changing this object later changes no proxy.
/// </summary>
public sealed class MuxCallOptions
{
    /// <summary>
    /// Metadata sent with each call (a tenant, a correlation id), read by the server as
    /// <see cref="MuxCallContext.Metadata"/>. Keys are printable ASCII without spaces (0x21-0x7E), compared
    /// case-insensitively; keys starting with <c>mux-</c> are reserved. Adding an invalid key throws
    /// <see cref="ArgumentException"/>. Bounded by the receiver's <c>MaxMetadataSize</c>. Defaults to empty.
    /// </summary>
    public IDictionary<string, string> Metadata { get; } = new Connection.CallMetadata();

    /// <summary>
    /// Replaces <see cref="MuxClientOptions.CallTimeout"/>, with the same meaning, for this proxy's calls; a shorter
    /// deadline inherited from the handler the call is made in still wins
    /// (<see cref="MuxServerOptions.EnableCallContextPropagation"/>). <see cref="System.Threading.Timeout.InfiniteTimeSpan"/>
    /// means none. Defaults to <see langword="null"/>: the client's CallTimeout (on a <see cref="MuxRemoteClient"/>,
    /// <see cref="MuxServerOptions.ClientCallTimeout"/>).
    /// </summary>
    public TimeSpan? Timeout { get; set; }

    /// <summary>
    /// Replaces <see cref="MuxClientOptions.WaitForConnection"/>, with the same meaning, for this proxy's calls. Not
    /// used by a <see cref="MuxRemoteClient"/>, whose connection is there or gone. Defaults to <see langword="null"/>:
    /// the client's setting.
    /// </summary>

    public bool? WaitForConnection { get; set; }
}
