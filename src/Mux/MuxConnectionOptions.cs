using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Protocol;
using MessagePack;

namespace Mux;

/// <summary>The settings <see cref="MuxClientOptions"/> and <see cref="MuxServerOptions"/> share: each side
/// applies them to its own connections, and announces its limits to the peer in the handshake.</summary>
public abstract class MuxConnectionOptions
{
    // Upper bounds of what a peer can make this side hold: a frame is buffered whole before parsing,
    // a message until it is read, and a stream holds up to its window of items.
    private const int MaximumMaxFrameSize = 256 * 1024 * 1024;
    private const int MaximumMaxMessageSize = 1024 * 1024 * 1024;
    private const int MaximumFragmentSize = 16 * 1024 * 1024;
    private const int MaximumStreamWindow = 65536;

    private protected MuxConnectionOptions()
    {
    }

    /// <summary>The largest frame this side accepts, in bytes: a client closes its connection on a larger
    /// frame from the server, a server disconnects a client that sends one. A Mux peer sends a larger
    /// message in fragments that fit (see <see cref="MaxMessageSize"/>). Between 4 KiB and 256 MiB.
    /// Defaults to 4 MiB.</summary>
    public int MaxFrameSize { get; set; } = 4 * 1024 * 1024;

    /// <summary>The largest message this side accepts, in bytes after the frame header, across all its fragments.
    /// Announced in the handshake; a larger message fails only its own call: a client refuses to send such a request
    /// (<see cref="InvalidOperationException"/>), a server answers <see cref="MuxStatusCode.MessageTooLarge"/> in place
    /// of such a response and to such a request. Between 4 KiB and 1 GiB. Defaults to 64 MiB.</summary>
    public int MaxMessageSize { get; set; } = 64 * 1024 * 1024;

    /// <summary>Messages this side sends larger than this go in fragments of at most this size (or the peer's
    /// MaxFrameSize if smaller), interleaved with other calls' frames, so a large message never holds the connection.
    /// Between 1 KiB and 16 MiB. Defaults to 64 KiB.</summary>
    public int FragmentSize { get; set; } = 64 * 1024;

    /// <summary>How many items of one stream (an <see cref="System.Collections.Generic.IAsyncEnumerable{T}"/> argument
    /// or result) this side buffers before the peer's producer must wait, so a slow reader slows only its own stream.
    /// Between 1 and 65536. Defaults to 64.</summary>
    public int StreamWindow { get; set; } = 64;

    /// <summary>How arguments and results are serialized (MessagePack-CSharp). The generated formatters are consulted
    /// first (they keep Native AOT working), then this resolver: set it for your own resolver or for LZ4 compression
    /// (<c>MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray)</c>), the same on
    /// both sides. Where <see cref="MessagePackSerializerOptions.Security"/> is <see cref="MessagePackSecurity.TrustedData"/>
    /// (the built-in default), each side reads its peer with <see cref="MessagePackSecurity.UntrustedData"/>, so a hostile
    /// body fails only its own call (<see cref="MuxStatusCode.InvalidArguments"/> on a server,
    /// <see cref="MessagePackSerializationException"/> on a client). Other security is used as it is. Defaults to
    /// <see cref="MessagePackSerializerOptions.Standard"/>.</summary>
    public MessagePackSerializerOptions SerializerOptions { get; set; } = MessagePackSerializerOptions.Standard;

    /// <summary>Where this side logs connection events (a server also logs handler failures). A logger that
    /// throws loses that entry and nothing else. Defaults to <see langword="null"/> (no logging).</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    /// <summary>How long nothing may arrive on a connection before this side sends a Ping. 30 seconds stays under the
    /// idle limits of common NATs, firewalls and load balancers, so keepalive also keeps the path open.
    /// <see cref="Timeout.InfiniteTimeSpan"/> turns keepalive off (a peer that vanished without a FIN or reset is then
    /// noticed only when a call times out). Defaults to 30 seconds.</summary>
    public TimeSpan KeepAliveInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long after a keepalive Ping the peer has to answer (any frame counts) before the connection is
    /// closed as dead (<see cref="MuxCloseReason.KeepAliveTimeout"/>; its calls fail with
    /// <see cref="MuxConnectionException"/>). A peer that stopped reading this long counts as dead too. 20 seconds,
    /// Kestrel's HTTP/2 ping timeout, outlasts a GC pause on a slow network. <see cref="Timeout.InfiniteTimeSpan"/> never
    /// closes (Pings are still sent). Defaults to 20 seconds.</summary>
    public TimeSpan KeepAliveTimeout { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>The clock of this side's timers: keepalive, deadlines and timeouts, reconnect waits and the
    /// <see cref="MuxClientOptions.EndPointResolver"/>'s rounds. Tests set a fake one (for example
    /// <c>FakeTimeProvider</c>) to move time by hand. Defaults to <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>How many bytes of frames may wait for one connection's socket, so a peer that stops reading costs
    /// bounded memory. Past it, a client's new calls wait (within their timeout and token) until the socket takes what
    /// is queued; a server runs no new request from that connection until then. A caller that found room adds its whole
    /// request, so the queue may pass the limit by that much. At least 4096. Defaults to 1 MiB.</summary>
    public int MaxOutboundBytesPerConnection { get; set; } = 1024 * 1024;

    /// <summary>The largest metadata a call to this side may carry, in bytes of its encoded map (keys and values in UTF-8
    /// plus a few bytes each). Announced in the handshake, so the caller fails a call with more before sending it
    /// (<see cref="InvalidOperationException"/>); one that arrives with more fails alone with
    /// <see cref="MuxStatusCode.MessageTooLarge"/>. At least 1; above <see cref="MaxMessageSize"/> it acts as
    /// MaxMessageSize. Defaults to 8 KiB.</summary>
    public int MaxMetadataSize { get; set; } = MetadataSection.DefaultMaxSize;

    /// <summary>A MaxMetadataSize above MaxMessageSize is allowed: the message bounds the section anyway, and a side
    /// whose MaxMessageSize is below 8 KiB must still start.</summary>

    internal void ValidateConnection(string owner)
    {
        string? error = this switch
        {
            { SerializerOptions: null } => $"{owner}.SerializerOptions is null. Leave it at its default " +
                "(MessagePackSerializerOptions.Standard) or set it to the options you serialize with.",
            { TimeProvider: null } => $"{owner}.TimeProvider is null. Leave it at its default (TimeProvider.System) " +
                "or set the clock you want its timers to use.",
            { MaxFrameSize: < ProtocolConstants.MinimumMaxFrameSize or > MaximumMaxFrameSize } => $"{owner}.MaxFrameSize is " +
                $"{MaxFrameSize}; it must be between {ProtocolConstants.MinimumMaxFrameSize} (4 KiB) and {MaximumMaxFrameSize} (256 MiB).",
            { FragmentSize: < ProtocolConstants.MinimumFragmentSize or > MaximumFragmentSize } => $"{owner}.FragmentSize is " +
                $"{FragmentSize}; it must be between {ProtocolConstants.MinimumFragmentSize} (1 KiB) and {MaximumFragmentSize} (16 MiB). " +
                "The default, 64 KiB, keeps small calls moving while a large message is sent.",
            { MaxMessageSize: < ProtocolConstants.MinimumMaxFrameSize or > MaximumMaxMessageSize } => $"{owner}.MaxMessageSize is " +
                $"{MaxMessageSize}; it must be between {ProtocolConstants.MinimumMaxFrameSize} (4 KiB) and {MaximumMaxMessageSize} (1 GiB). " +
                "The default is 64 MiB.",
            { MaxMetadataSize: < 1 } =>
                $"{owner}.MaxMetadataSize is {MaxMetadataSize}; it must be at least 1 (the default is 8 KiB).",
            { StreamWindow: < 1 or > MaximumStreamWindow } =>
                $"{owner}.StreamWindow is {StreamWindow}; it must be between 1 and {MaximumStreamWindow} items (the default is 64).",
            { MaxOutboundBytesPerConnection: < 4096 } => $"{owner}.MaxOutboundBytesPerConnection is " +
                $"{MaxOutboundBytesPerConnection}; it must be at least 4096 bytes (the default is 1 MiB).",
            _ => null,
        };
        if (error is not null)
        {
            throw new InvalidOperationException(error);
        }

        OptionsValidation.RequirePositive(KeepAliveInterval, owner, nameof(KeepAliveInterval), allowInfinite: true);
        OptionsValidation.RequirePositive(KeepAliveTimeout, owner, nameof(KeepAliveTimeout), allowInfinite: true);
    }
}
