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

    /// <summary>The largest message this side accepts, in bytes after the frame header, across all its
    /// fragments: a response for a client, a request for a server. Each side announces it in the
    /// handshake, and a larger message fails only its own call, the connection staying up: a client
    /// refuses to send a request too large for its server (<see cref="InvalidOperationException"/>); a
    /// server answers <see cref="MuxStatusCode.MessageTooLarge"/> in place of a response too large for its
    /// client, and to a too large request it receives. Separate from <see cref="MaxFrameSize"/>: large
    /// messages travel in fragments of <see cref="FragmentSize"/>. Between 4 KiB and 1 GiB. Defaults to
    /// 64 MiB.</summary>
    public int MaxMessageSize { get; set; } = 64 * 1024 * 1024;

    /// <summary>Messages this side sends (a client's requests, a server's responses) larger than this many
    /// bytes go in fragments of at most this size (or the peer's MaxFrameSize if smaller), interleaved with
    /// the other calls' frames, so a large message never holds the connection. Between 1 KiB and 16 MiB.
    /// Defaults to 64 KiB.</summary>
    public int FragmentSize { get; set; } = 64 * 1024;

    /// <summary>How many items of one stream (an <see cref="System.Collections.Generic.IAsyncEnumerable{T}"/>
    /// argument or result of a [MuxService] method) this side buffers before the producer on the other side
    /// must wait for it to read them: the stream's credit window, announced in the handshake. A slow reader
    /// thus slows only its own stream's producer, never the connection or other calls. Between 1 and 65536.
    /// Defaults to 64.</summary>
    public int StreamWindow { get; set; } = 64;

    /// <summary>How arguments and results are written and read (MessagePack-CSharp). The formatters the Mux
    /// generator emitted for the contracts are consulted first (they keep Native AOT working), then this
    /// resolver: set it for your own resolver or for LZ4 compression
    /// (<c>MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray)</c>),
    /// the same on client and server. Each side reads what its peer sends as untrusted, since a server may be
    /// hostile as well as a client: where <see cref="MessagePackSerializerOptions.Security"/> is
    /// <see cref="MessagePackSecurity.TrustedData"/> (every built-in options object's default) it reads with
    /// <see cref="MessagePackSecurity.UntrustedData"/> (collision-resistant dictionaries, a nesting limit), so a
    /// hostile body fails only its own call and the connection stays open: a server answers
    /// <see cref="MuxStatusCode.InvalidArguments"/>, a client's call fails with
    /// <see cref="MessagePackSerializationException"/>. Any other security you set is used as it is. Defaults
    /// to <see cref="MessagePackSerializerOptions.Standard"/>.</summary>
    public MessagePackSerializerOptions SerializerOptions { get; set; } = MessagePackSerializerOptions.Standard;

    /// <summary>Where this side logs connection events (a server also logs handler failures). A logger that
    /// throws loses that entry and nothing else. Defaults to <see langword="null"/> (no logging).</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    /// <summary>How long nothing may arrive on a connection before this side sends a Ping (the peer answers
    /// with a Pong): an idle connection pings about once per interval, an 18-byte frame each way. 30 seconds
    /// stays under the idle limits of common NATs, firewalls and load balancers, so keepalive also keeps an
    /// idle connection's path open. <see cref="Timeout.InfiniteTimeSpan"/> turns keepalive off (a peer that
    /// vanished without a FIN or reset is then noticed only when a call times out). Defaults to 30 seconds.</summary>
    public TimeSpan KeepAliveInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long after a keepalive Ping the peer has to answer (any frame counts) before the
    /// connection is closed as dead (<see cref="MuxCloseReason.KeepAliveTimeout"/>; its calls fail with
    /// <see cref="MuxConnectionException"/>). A peer that stopped reading this long counts as dead too, so a
    /// dead peer is noticed within KeepAliveInterval + KeepAliveTimeout. 20 seconds, Kestrel's HTTP/2 ping
    /// timeout, outlasts a busy or paused (GC) process on a slow network and fails calls well within their own
    /// timeout. <see cref="Timeout.InfiniteTimeSpan"/> never closes (Pings are still sent). Defaults to 20 seconds.</summary>
    public TimeSpan KeepAliveTimeout { get; set; } = TimeSpan.FromSeconds(20);

    /// <summary>The clock of this side's timers: keepalive on both sides; on a client, calls' deadlines
    /// (<see cref="MuxClientOptions.CallTimeout"/>), the waits between reconnect attempts and the
    /// <see cref="MuxClientOptions.EndPointResolver"/>'s rounds; on a server, the handshake and idle timeouts,
    /// the deadlines of the calls it serves and <see cref="MuxServerOptions.ClientCallTimeout"/>. Tests set a
    /// fake one (for example <c>FakeTimeProvider</c> from Microsoft.Extensions.TimeProvider.Testing) to move
    /// time by hand. Defaults to <see cref="TimeProvider.System"/>.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>How many bytes of frames may wait for one connection's socket, so a peer that stops reading
    /// costs a bounded amount of memory. Past it, a client's new calls wait, asynchronously and within
    /// <see cref="MuxClientOptions.CallTimeout"/> and their token, until the socket takes what is queued (each
    /// caller that found room adds its whole request, so the queue may pass the limit by that much); a server
    /// runs no new request from that connection until then (calls already running still answer). At least
    /// 4096. Defaults to 1 MiB: hundreds of small requests or a thousand 1 KiB answers never come near it,
    /// and a stuck connection holds at most about that much.</summary>
    public int MaxOutboundBytesPerConnection { get; set; } = 1024 * 1024;

    /// <summary>The largest metadata a call to this side may carry, in bytes of its encoded map (keys and
    /// values in UTF-8 plus a few bytes each; see docs/protocol.md, *Metadata*): a client's calls to a server,
    /// or a server's calls to a client (<see cref="MuxRemoteClient"/>). Announced in the handshake, so the
    /// caller fails a call with more before sending it (<see cref="InvalidOperationException"/>); one that
    /// arrives with more anyway fails alone with <see cref="MuxStatusCode.MessageTooLarge"/>, the connection
    /// staying up. At least 1; above <see cref="MaxMessageSize"/> it acts as MaxMessageSize. Defaults to 8 KiB.</summary>
    public int MaxMetadataSize { get; set; } = MetadataSection.DefaultMaxSize;

    /// <summary>Checks the shared settings, naming each as <paramref name="owner"/>'s. A MaxMetadataSize
    /// above MaxMessageSize is allowed: the message bounds the section anyway, and a side whose
    /// MaxMessageSize is below 8 KiB must still start.</summary>
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
