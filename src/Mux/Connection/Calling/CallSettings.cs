namespace Mux.Connection;

/// <summary>
/// The <see cref="MuxCallOptions"/> a proxy was bound to, checked and copied once when the proxy
/// was made (so a later change to the options object changes no proxy), with its metadata encoded
/// once: a call through such a proxy writes the section's bytes as they are. Made by
/// <see cref="From"/>. Immutable.
/// </summary>
internal sealed class CallSettings(TimeSpan? timeout, bool? waitForConnection, KeyValuePair<string, string>[] metadata, byte[]? encodedMetadata)
{
    /// <summary>The call's timeout in place of the side's own (CallTimeout, ClientCallTimeout); null for that.</summary>
    public TimeSpan? Timeout { get; } = timeout;

    /// <summary>Whether a call waits for a connection, in place of MuxClientOptions.WaitForConnection; null for that.</summary>
    public bool? WaitForConnection { get; } = waitForConnection;

    /// <summary>The metadata, keys checked (what client interceptors start from).</summary>
    public KeyValuePair<string, string>[] Metadata { get; } = metadata;

    /// <summary>The metadata section (MetadataSection.Encode), or null when there is no metadata.</summary>
    public byte[]? EncodedMetadata { get; } = encodedMetadata;

    /// <summary>A checked copy of <paramref name="options"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The timeout is not positive (or infinite).</exception>
    public static CallSettings From(MuxCallOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        TimeSpan? timeout = options.Timeout is { } value ? CheckTimeout(value, nameof(MuxCallOptions) + "." + nameof(MuxCallOptions.Timeout)) : null;

        // The options' own dictionary checked its keys as they were set; anything else was
        // assigned nowhere (the property has no setter).
        var metadata = (CallMetadata)options.Metadata;
        return new CallSettings(timeout, options.WaitForConnection, metadata.ToArray(), metadata.Encode());
    }

    /// <summary><paramref name="value"/>, when it can be a call's timeout: positive (up to what a
    /// timer takes, about 24.8 days), or <see cref="System.Threading.Timeout.InfiniteTimeSpan"/>.</summary>
    public static TimeSpan CheckTimeout(TimeSpan value, string name)
    {
        if (value != System.Threading.Timeout.InfiniteTimeSpan && (value <= TimeSpan.Zero || value.TotalMilliseconds > int.MaxValue))
        {
            throw new ArgumentOutOfRangeException(name, value, $"{name} is {value}; it must be positive and at most {TimeSpan.FromMilliseconds(int.MaxValue)}, or Timeout.InfiniteTimeSpan for none.");
        }

        return value;
    }
}
