using System.Buffers;
using System.Buffers.Binary;
using MessagePack;

namespace Mux.Protocol;

/// <summary>The body of Hello and HelloAck. Unknown keys are skipped so later versions can add settings.</summary>
internal readonly record struct HandshakeSettings(ushort Version, int MaxFrameSize, int MaxConcurrentCalls, string? AuthToken) : IFrameBody
{
    public const int DefaultStreamWindow = 64;

    /// <summary>Items of each stream this side buffers: the initial credit the peer starts each stream with.</summary>
    public int StreamWindow { get; init; } = DefaultStreamWindow;

    /// <summary>The largest message (all its fragments) this side accepts; int.MaxValue when the peer did not say.</summary>
    public int MaxMessageSize { get; init; } = int.MaxValue;

    /// <summary>No fragment of a Request follows its Cancel. In force when both sides announce it.</summary>
    public bool CancelEndsFragments { get; init; } = true;

    /// <summary>Whether a client takes streams on the calls its server starts; only a client's Hello carries it.</summary>
    public bool ServerCallStreams { get; init; } = true;

    /// <summary>The largest metadata map this side accepts; 0 when the peer did not announce it, so it is sent none.</summary>
    public int MaxMetadataSize { get; init; }

    private const string MaxFrameSizeKey = "maxFrameSize";
    private const string MaxMessageSizeKey = "maxMessageSize";
    private const string MaxConcurrentCallsKey = "maxConcurrentCalls";
    private const string AuthTokenKey = "authToken";
    private const string TraceContextKey = "traceContext";
    private const string StreamWindowKey = "streamWindow";
    private const string CancelEndsFragmentsKey = "cancelEndsFragments";
    private const string ServerCallStreamsKey = "serverCallStreams";
    private const string MaxMetadataSizeKey = "maxMetadataSize";

    public void Write(ref MessagePackWriter writer)
    {
        Span<byte> prefix = writer.GetSpan(ProtocolConstants.HelloHeaderSize);
        BinaryPrimitives.WriteUInt32LittleEndian(prefix, ProtocolConstants.Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(prefix[4..], Version);
        writer.Advance(ProtocolConstants.HelloHeaderSize);
        writer.WriteMapHeader(7 + (AuthToken is null ? 0 : 1) + (MaxMetadataSize > 0 ? 1 : 0));
        writer.Write(MaxFrameSizeKey);
        writer.Write(MaxFrameSize);
        writer.Write(MaxMessageSizeKey);
        writer.Write(MaxMessageSize);
        writer.Write(MaxConcurrentCallsKey);
        writer.Write(MaxConcurrentCalls);
        writer.Write(TraceContextKey);
        writer.Write(true);
        writer.Write(StreamWindowKey);
        writer.Write(StreamWindow);
        writer.Write(CancelEndsFragmentsKey);
        writer.Write(CancelEndsFragments);
        writer.Write(ServerCallStreamsKey);
        writer.Write(ServerCallStreams);
        if (MaxMetadataSize > 0)
        {
            writer.Write(MaxMetadataSizeKey);
            writer.Write(MaxMetadataSize);
        }

        if (AuthToken is not null)
        {
            writer.Write(AuthTokenKey);
            writer.Write(AuthToken);
        }
    }

    /// <exception cref="MuxProtocolException">Wrong magic, or a settings map that is not valid.</exception>
    public static HandshakeSettings Parse(in ReadOnlySequence<byte> payload) => Parse(payload, out _);

    /// <summary>A peer that did not announce <c>traceContext</c> must never receive that flag, which version-1 readers
    /// reject.</summary>

    public static HandshakeSettings Parse(in ReadOnlySequence<byte> payload, out bool readsTraceContext)
    {
        byte[] bytes = payload.ToArray(); // Once per connection: simplicity beats pooling here.
        if (bytes.Length < ProtocolConstants.HelloHeaderSize)
        {
            throw new MuxProtocolException(
                $"The handshake is {bytes.Length} bytes, shorter than its {ProtocolConstants.HelloHeaderSize}-byte header (magic and version).");
        }

        if (BinaryPrimitives.ReadUInt32LittleEndian(bytes) != ProtocolConstants.Magic)
        {
            throw new MuxProtocolException("The peer did not send the MUX1 magic: it is not a Mux endpoint.");
        }

        ushort version = BinaryPrimitives.ReadUInt16LittleEndian(bytes.AsSpan(4));

        // What a peer says by leaving a key out: the booleans of later builds are false for it.
        var settings = new HandshakeSettings(version, ProtocolConstants.MinimumMaxFrameSize, int.MaxValue, null)
        {
            CancelEndsFragments = false,
            ServerCallStreams = false,
        };
        readsTraceContext = false;
        try
        {
            var reader = new MessagePackReader(bytes.AsMemory(ProtocolConstants.HelloHeaderSize));
            int count = reader.ReadMapHeader();
            for (int i = 0; i < count; i++)
            {
                switch (reader.ReadString())
                {
                    case MaxFrameSizeKey:
                        settings = settings with { MaxFrameSize = reader.ReadInt32() };
                        break;
                    case MaxMessageSizeKey:
                        settings = settings with { MaxMessageSize = reader.ReadInt32() };
                        break;
                    case MaxConcurrentCallsKey:
                        settings = settings with { MaxConcurrentCalls = reader.ReadInt32() };
                        break;
                    case AuthTokenKey:
                        settings = settings with { AuthToken = reader.ReadString() };
                        break;
                    case TraceContextKey:
                        readsTraceContext = reader.ReadBoolean();
                        break;
                    case StreamWindowKey:
                        settings = settings with { StreamWindow = reader.ReadInt32() };
                        break;
                    case CancelEndsFragmentsKey:
                        settings = settings with { CancelEndsFragments = reader.ReadBoolean() };
                        break;
                    case ServerCallStreamsKey:
                        settings = settings with { ServerCallStreams = reader.ReadBoolean() };
                        break;
                    case MaxMetadataSizeKey:
                        settings = settings with { MaxMetadataSize = reader.ReadInt32() };
                        break;
                    default:
                        reader.Skip();
                        break;
                }
            }
        }
        catch (Exception ex) when (MalformedMessagePack.IsReadFailure(ex))
        {
            throw new MuxProtocolException("The handshake settings are not a valid MessagePack map: " + ex.Message, ex);
        }

        if (settings.MaxFrameSize < ProtocolConstants.MinimumMaxFrameSize || settings.MaxConcurrentCalls < 1 || settings.StreamWindow < 1 ||
            settings.MaxMessageSize < 1 || settings.MaxMetadataSize < 0)
        {
            throw new MuxProtocolException(
                $"The handshake settings are out of range: maxFrameSize {settings.MaxFrameSize} " +
                $"(at least {ProtocolConstants.MinimumMaxFrameSize}), " +
                $"maxConcurrentCalls {settings.MaxConcurrentCalls} (at least 1), streamWindow {settings.StreamWindow} (at least 1), " +
                $"maxMessageSize {settings.MaxMessageSize} (at least 1), maxMetadataSize {settings.MaxMetadataSize} (at least 0).");
        }

        return settings;
    }
}
