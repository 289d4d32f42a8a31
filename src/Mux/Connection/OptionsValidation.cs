using MessagePack;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>Checks shared by the option classes, with messages that say how to fix the value.</summary>
internal static class OptionsValidation
{
    /// <summary>The largest MaxFrameSize we allow: frames are buffered whole before parsing.</summary>
    public const int MaximumMaxFrameSize = 256 * 1024 * 1024;

    public static void RequirePositive(TimeSpan value, string owner, string name, bool allowInfinite)
    {
        if (allowInfinite && value == Timeout.InfiniteTimeSpan)
        {
            return;
        }

        if (value <= TimeSpan.Zero || value.TotalMilliseconds > int.MaxValue)
        {
            throw new InvalidOperationException($"{owner}.{name} is {value}; it must be positive and at most {TimeSpan.FromMilliseconds(int.MaxValue)}{(allowInfinite ? ", or Timeout.InfiniteTimeSpan" : string.Empty)}.");
        }
    }

    /// <summary>The largest StreamWindow we allow: a stream buffers up to that many items.</summary>
    public const int MaximumStreamWindow = 65536;

    /// <summary>The largest MaxMessageSize we allow: a message is held whole (in pooled segments)
    /// until it is read, so this bounds what one call can make its receiver hold.</summary>
    public const int MaximumMaxMessageSize = 1024 * 1024 * 1024;

    /// <summary>The largest FragmentSize we allow: a fragment is a frame, written whole.</summary>
    public const int MaximumFragmentSize = 16 * 1024 * 1024;

    /// <summary>Checks the settings a client and a server both have, which each side's connection
    /// takes alike, so the two option classes say the same about the same mistake.
    /// <paramref name="maxMetadataSize"/> must be at least 1, but a value above MaxMessageSize is
    /// allowed (the section is part of the message, so MaxMessageSize bounds it anyway; see
    /// EffectiveMetadataSize): a side configured with a MaxMessageSize below the 8 KiB default must
    /// not fail to start.</summary>
    public static void RequireConnectionSettings(string owner, MessagePackSerializerOptions? serializerOptions, TimeProvider? timeProvider, int maxFrameSize, int fragmentSize, int maxMessageSize, int maxMetadataSize, int streamWindow, int maxOutboundBytes, TimeSpan keepAliveInterval, TimeSpan keepAliveTimeout)
    {
        if (serializerOptions is null)
        {
            throw new InvalidOperationException($"{owner}.SerializerOptions is null. Leave it at its default (MessagePackSerializerOptions.Standard) or set it to the options you serialize with.");
        }

        if (timeProvider is null)
        {
            throw new InvalidOperationException($"{owner}.TimeProvider is null. Leave it at its default (TimeProvider.System) or set the clock you want its timers to use.");
        }

        if (maxFrameSize < ProtocolConstants.MinimumMaxFrameSize || maxFrameSize > MaximumMaxFrameSize)
        {
            throw new InvalidOperationException($"{owner}.MaxFrameSize is {maxFrameSize}; it must be between {ProtocolConstants.MinimumMaxFrameSize} (4 KiB) and {MaximumMaxFrameSize} (256 MiB).");
        }

        if (fragmentSize < ProtocolConstants.MinimumFragmentSize || fragmentSize > MaximumFragmentSize)
        {
            throw new InvalidOperationException($"{owner}.FragmentSize is {fragmentSize}; it must be between {ProtocolConstants.MinimumFragmentSize} (1 KiB) and {MaximumFragmentSize} (16 MiB). The default, 64 KiB, keeps small calls moving while a large message is sent.");
        }

        if (maxMessageSize < ProtocolConstants.MinimumMaxFrameSize || maxMessageSize > MaximumMaxMessageSize)
        {
            throw new InvalidOperationException($"{owner}.MaxMessageSize is {maxMessageSize}; it must be between {ProtocolConstants.MinimumMaxFrameSize} (4 KiB) and {MaximumMaxMessageSize} (1 GiB). The default is 64 MiB.");
        }

        if (maxMetadataSize < 1)
        {
            throw new InvalidOperationException($"{owner}.MaxMetadataSize is {maxMetadataSize}; it must be at least 1 (the default is 8 KiB).");
        }

        if (streamWindow < 1 || streamWindow > MaximumStreamWindow)
        {
            throw new InvalidOperationException($"{owner}.StreamWindow is {streamWindow}; it must be between 1 and {MaximumStreamWindow} items (the default is 64).");
        }

        if (maxOutboundBytes < 4096)
        {
            throw new InvalidOperationException($"{owner}.MaxOutboundBytesPerConnection is {maxOutboundBytes}; it must be at least 4096 bytes (the default is 1 MiB).");
        }

        RequirePositive(keepAliveInterval, owner, "KeepAliveInterval", allowInfinite: true);
        RequirePositive(keepAliveTimeout, owner, "KeepAliveTimeout", allowInfinite: true);
    }

    /// <summary>The metadata limit a side announces and enforces: its MaxMetadataSize, but no more
    /// than its MaxMessageSize (a message that holds the section is bounded by that already).</summary>
    public static int EffectiveMetadataSize(int maxMetadataSize, int maxMessageSize) => Math.Min(maxMetadataSize, maxMessageSize);

    /// <summary>Checks a list option (Interceptors, EndPoints) for null items; <paramref name="fix"/>
    /// says what to put there instead.</summary>
    public static void RequireNoNulls<T>(IList<T> items, string owner, string name, string fix)
        where T : class
    {
        for (int i = 0; i < items.Count; i++)
        {
            if (items[i] is null)
            {
                throw new InvalidOperationException($"{owner}.{name}[{i}] is null. Remove it, or {fix}.");
            }
        }
    }
}
