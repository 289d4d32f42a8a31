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

    public static void RequireFrameSize(int value, string owner)
    {
        if (value < ProtocolConstants.MinimumMaxFrameSize || value > MaximumMaxFrameSize)
        {
            throw new InvalidOperationException($"{owner}.MaxFrameSize is {value}; it must be between {ProtocolConstants.MinimumMaxFrameSize} (4 KiB) and {MaximumMaxFrameSize} (256 MiB).");
        }
    }

    /// <summary>The largest StreamWindow we allow: a stream buffers up to that many items.</summary>
    public const int MaximumStreamWindow = 65536;

    public static void RequireStreamWindow(int value, string owner)
    {
        if (value < 1 || value > MaximumStreamWindow)
        {
            throw new InvalidOperationException($"{owner}.StreamWindow is {value}; it must be between 1 and {MaximumStreamWindow} items (the default is 64).");
        }
    }

    /// <summary>The largest MaxMessageSize we allow: a message is reassembled into one array.</summary>
    public const int MaximumMaxMessageSize = 1024 * 1024 * 1024;

    /// <summary>The largest FragmentSize we allow: a fragment is a frame, written whole.</summary>
    public const int MaximumFragmentSize = 16 * 1024 * 1024;

    public static void RequireMessageSizes(int fragmentSize, int maxMessageSize, string owner)
    {
        if (fragmentSize < ProtocolConstants.MinimumFragmentSize || fragmentSize > MaximumFragmentSize)
        {
            throw new InvalidOperationException($"{owner}.FragmentSize is {fragmentSize}; it must be between {ProtocolConstants.MinimumFragmentSize} (1 KiB) and {MaximumFragmentSize} (16 MiB). The default, 64 KiB, keeps small calls moving while a large message is sent.");
        }

        if (maxMessageSize < ProtocolConstants.MinimumMaxFrameSize || maxMessageSize > MaximumMaxMessageSize)
        {
            throw new InvalidOperationException($"{owner}.MaxMessageSize is {maxMessageSize}; it must be between {ProtocolConstants.MinimumMaxFrameSize} (4 KiB) and {MaximumMaxMessageSize} (1 GiB). The default is 64 MiB.");
        }
    }

    public static void RequireMetadataSize(int maxMetadataSize, int maxMessageSize, string owner)
    {
        if (maxMetadataSize < 1 || maxMetadataSize > maxMessageSize)
        {
            throw new InvalidOperationException($"{owner}.MaxMetadataSize is {maxMetadataSize}; it must be between 1 and {owner}.MaxMessageSize ({maxMessageSize}). The default is 8 KiB.");
        }
    }

    public static void RequireNoNulls<T>(IList<T> interceptors, string owner)
        where T : class
    {
        for (int i = 0; i < interceptors.Count; i++)
        {
            if (interceptors[i] is null)
            {
                throw new InvalidOperationException($"{owner}.Interceptors[{i}] is null. Remove it, or add an interceptor instance.");
            }
        }
    }
}
