namespace Mux;

/// <summary>
/// Settings for the calls of one proxy: <c>client.CreateProxy&lt;IUserService&gt;(new MuxCallOptions { ... })</c>
/// returns a proxy whose every call carries them (the client's other proxies are unchanged). Making
/// such a proxy is cheap (it validates and encodes the options once), so make one per tenant, per
/// request, or wherever the settings change. The proxy takes a copy: changing this object later
/// changes no proxy made from it.
/// </summary>
public sealed class MuxCallOptions
{
    /// <summary>
    /// Metadata sent with each call (a tenant, a correlation id), read by the server as
    /// <see cref="MuxCallContext.Metadata"/>; client interceptors see it in
    /// <see cref="MuxClientCall.Metadata"/> and may add to it. Keys are printable ASCII without
    /// spaces (0x21-0x7E), compared case-insensitively; keys starting with <c>mux-</c> are reserved
    /// for Mux. Adding an invalid key throws <see cref="ArgumentException"/>. Bounded by the
    /// receiver's <c>MaxMetadataSize</c> (8 KiB by default). Defaults to empty.
    /// </summary>
    public IDictionary<string, string> Metadata { get; } = new Connection.CallMetadata();

    /// <summary>
    /// How long each call may take, counted from when it is made, in place of
    /// <see cref="MuxClientOptions.CallTimeout"/>: waiting for a connection or a call slot and a
    /// resend all spend from it, and it is the deadline sent to the server (a shorter deadline
    /// inherited from the handler the call is made in still wins, see
    /// <see cref="MuxServerOptions.EnableCallContextPropagation"/>). As CallTimeout, for a streaming
    /// call it bounds only the wait for a connection.
    /// <see cref="System.Threading.Timeout.InfiniteTimeSpan"/> means none. Defaults to
    /// <see langword="null"/>: the client's CallTimeout (or, on a <see cref="MuxRemoteClient"/>,
    /// <see cref="MuxServerOptions.ClientCallTimeout"/>).
    /// </summary>
    public TimeSpan? Timeout { get; set; }

    /// <summary>
    /// Whether a call made while the client has no connection (it is connecting or reconnecting)
    /// waits for one, within its timeout, in place of <see cref="MuxClientOptions.WaitForConnection"/>.
    /// <see langword="false"/> fails such a call at once with <see cref="MuxConnectionException"/>
    /// (<see cref="MuxConnectionException.IsSafeToRetry"/> true: nothing was sent), and a call the
    /// server provably never ran (it was sent just before the connection was lost, or above the
    /// server's GoAway) fails the same way instead of waiting for the next connection. Not used by a
    /// <see cref="MuxRemoteClient"/>, whose connection is there or gone. Defaults to
    /// <see langword="null"/>: the client's setting.
    /// </summary>
    public bool? WaitForConnection { get; set; }
}
