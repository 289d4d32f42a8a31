using System.Buffers;
using System.Buffers.Binary;
using MessagePack;

namespace Mux.Protocol;

/// <summary>
/// What each side announces in Hello / HelloAck, and the body of those frames. Unknown keys are skipped so that later
/// versions can add settings without breaking version-1 peers.
/// </summary>
internal readonly record struct HandshakeSettings(ushort Version, int MaxFrameSize, int MaxConcurrentCalls, string? AuthToken) : IFrameBody
{
    /// <summary>The stream window a peer that does not announce <c>streamWindow</c> is taken to grant.</summary>
    public const int DefaultStreamWindow = 64;

    /// <summary>How many items of each stream this side buffers for a call before the producer must wait for credit: the
    /// initial credit the peer starts each stream with.</summary>
    public int StreamWindow { get; init; } = DefaultStreamWindow;

    /// <summary>The largest message (all its fragments) this side accepts; int.MaxValue when the peer did not say.</summary>
    public int MaxMessageSize { get; init; } = int.MaxValue;

    /// <summary>Whether this side takes a Cancel to end a Request still in fragments (docs/protocol.md, *Fragments*): it
    /// sends no fragment of its Request after the Request's Cancel, and expects none after a received Request's Cancel.
    /// In force when both sides announce it; false when the peer did not say.</summary>
    public bool CancelEndsFragments { get; init; } = true;

    /// <summary>Whether this side takes streams on the calls a server starts to its client (docs/protocol.md, *Calls from
    /// server to client*). Only a client's Hello carries it; a server calls a streaming method of its client only when the
    /// client said true. False when the peer did not say.</summary>
    public bool ServerCallStreams { get; init; } = true;

    /// <summary>The largest metadata section (its map's bytes, docs/protocol.md "Metadata") this side accepts in a
    /// Request; 0 when the peer did not announce the key: it does not read the section, closes the connection on the
    /// Metadata flag, and is sent no metadata.</summary>
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

    /// <summary>Writes the body of Hello or HelloAck: magic, version, then the settings map.</summary>
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

    /// <summary>Parses the payload of a Hello or HelloAck frame (magic, version, settings map).</summary>
    /// <exception cref="MuxProtocolException">Wrong magic, or a settings map that is not valid.</exception>
    public static HandshakeSettings Parse(in ReadOnlySequence<byte> payload) => Parse(payload, out _);

    /// <summary>Parses like <see cref="Parse(in ReadOnlySequence{byte})"/>, and says whether the peer announced
    /// <c>traceContext</c> (it reads the trace-context header of Requests). A peer that did not must never receive that
    /// flag, which version-1 readers reject.</summary>
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
