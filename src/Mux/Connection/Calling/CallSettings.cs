using System.Runtime.CompilerServices;

namespace Mux.Connection;

/// <summary>
/// What every call of one invoker is made with, resolved once: a client's or a server connection's own, or those bound to a proxy's
/// <see cref="MuxCallOptions"/> (checked and copied when the proxy was made, so a later change to the options changes no proxy, with the
/// metadata encoded once). Immutable.
/// </summary>
internal sealed class CallSettings
{
    private CallSettings(
        TimeProvider clock, TimeSpan timeout, TimeSpan? ownTimeout, bool waits, bool inherits, KeyValuePair<string, string>[] metadata,
        byte[]? encodedMetadata)
    {
        Clock = clock;
        TimeoutSpan = timeout;
        Timeout = ClockDeadline.ToTimestampSpan(clock, timeout);
        OwnTimeout = ownTimeout;
        WaitsForConnection = waits;
        InheritsDeadline = inherits;
        Metadata = metadata;
        EncodedMetadata = encodedMetadata;
    }

    public TimeProvider Clock { get; }

    /// <summary>The calls' timeout in <see cref="Clock"/>'s units; <see cref="ClockDeadline.Never"/> for none.</summary>
    public long Timeout { get; }

    /// <summary>The calls' timeout as given (what <see cref="MuxClientCall.Timeout"/> starts from).</summary>
    public TimeSpan TimeoutSpan { get; }

    /// <summary>The timeout when it replaced the side's own (CallTimeout, ClientCallTimeout), for the timeout's message.</summary>
    public TimeSpan? OwnTimeout { get; }

    /// <summary>Whether a call that finds no connection waits for the next one (a server's connection is there or gone).</summary>
    public bool WaitsForConnection { get; }

    /// <summary>Whether a call made while serving one inherits its deadline: a client's calls do, and a server's call to its client does
    /// not, since the call it serves is another flow.</summary>
    public bool InheritsDeadline { get; }

    /// <summary>The metadata, keys checked (what client interceptors start from).</summary>
    public KeyValuePair<string, string>[] Metadata { get; }

    /// <summary>The metadata section (MetadataSection.Encode), or null when there is no metadata.</summary>
    public byte[]? EncodedMetadata { get; }

    public static CallSettings ForClient(MuxClientOptions options) =>
        new(options.TimeProvider, options.CallTimeout, null, options.WaitForConnection, inherits: true, [], null);

    public static CallSettings ForServer(TimeProvider clock, TimeSpan clientCallTimeout) =>
        new(clock, clientCallTimeout, null, waits: false, inherits: false, [], null);

    /// <summary>These settings with <paramref name="options"/> in place: a bound proxy's.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The timeout is not positive (or infinite).</exception>
    public CallSettings Bind(MuxCallOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        TimeSpan? timeout = options.Timeout is { } value ? CheckTimeout(value, nameof(MuxCallOptions) + "." + nameof(MuxCallOptions.Timeout)) : null;

        // The options' own dictionary checked its keys as they were set; the property has no setter.
        var metadata = (CallMetadata)options.Metadata;
        bool waits = options.WaitForConnection ?? WaitsForConnection;
        return new CallSettings(Clock, timeout ?? TimeoutSpan, timeout, waits, InheritsDeadline, metadata.ToArray(), metadata.Encode());
    }

    /// <summary>These settings with the timeout the interceptors left on a streaming call, for its wait for a connection.</summary>
    public CallSettings WithTimeout(TimeSpan timeout) =>
        new(Clock, timeout, OwnTimeoutFor(timeout), WaitsForConnection, InheritsDeadline, Metadata, EncodedMetadata);

    /// <summary>The deadline of a call made at <paramref name="madeAt"/> (0 for now); see <see cref="CallDeadline.Fix"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public CallDeadline FixDeadline(long madeAt, out long now) => CallDeadline.Fix(Clock, Timeout, OwnTimeout, InheritsDeadline, madeAt, out now);

    /// <summary>The deadline of a call whose interceptors left <paramref name="timeout"/> on it, made at <paramref name="madeAt"/>.</summary>
    public CallDeadline FixDeadline(TimeSpan timeout, long madeAt) =>
        CallDeadline.Fix(Clock, ClockDeadline.ToTimestampSpan(Clock, timeout), OwnTimeoutFor(timeout), InheritsDeadline, madeAt, out _);

    // A timeout an interceptor left is the call's own when it differs from these settings' or these had their own (for the message).
    private TimeSpan? OwnTimeoutFor(TimeSpan timeout) => timeout != TimeoutSpan || OwnTimeout is not null ? timeout : null;

    /// <summary><paramref name="value"/>, when it can be a call's timeout: positive (up to what a timer takes, about 24.8 days), or
    /// <see cref="System.Threading.Timeout.InfiniteTimeSpan"/>.</summary>
    public static TimeSpan CheckTimeout(TimeSpan value, string name)
    {
        if (value != System.Threading.Timeout.InfiniteTimeSpan && (value <= TimeSpan.Zero || value.TotalMilliseconds > int.MaxValue))
        {
            TimeSpan most = TimeSpan.FromMilliseconds(int.MaxValue);
            throw new ArgumentOutOfRangeException(
                name, value, $"{name} is {value}; it must be positive and at most {most}, or Timeout.InfiniteTimeSpan for none.");
        }

        return value;
    }
}
