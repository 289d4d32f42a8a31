using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using MessagePack;

namespace Mux;

/// <summary>Settings of a <see cref="MuxClient"/>. Validated when the client connects.</summary>
public sealed class MuxClientOptions
{
    /// <summary>
    /// The server to connect to, for <see cref="MuxClient.ConnectAsync(MuxClientOptions, CancellationToken)"/>
    /// and Mux.Hosting's AddMuxClient. Defaults to <see langword="null"/> (must be set there).
    /// </summary>
    public EndPoint? EndPoint { get; set; }

    /// <summary>
    /// How long a call may wait for its response before it fails with <see cref="TimeoutException"/>.
    /// <see cref="Timeout.InfiniteTimeSpan"/> disables the deadline (a lost connection still fails
    /// the call). Defaults to 30 seconds.
    /// </summary>
    public TimeSpan CallTimeout { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long connecting and the handshake may take. Defaults to 10 seconds.</summary>
    public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// The largest frame this client accepts from the server, in bytes; a larger response closes the
    /// connection. Must be at least 4 KiB. Defaults to 4 MiB.
    /// </summary>
    public int MaxFrameSize { get; set; } = 4 * 1024 * 1024;

    /// <summary>
    /// How arguments are written and results read (MessagePack-CSharp). Formatters the Mux generator
    /// emitted for the contracts' argument lists and <c>[MessagePackObject]</c> types are always
    /// consulted first (they keep Native AOT working), then this options' resolver. Set it to use
    /// your own resolver or LZ4 compression, for example
    /// <c>MessagePackSerializerOptions.Standard.WithCompression(MessagePackCompression.Lz4BlockArray)</c>;
    /// the server must use the same compression. Defaults to <see cref="MessagePackSerializerOptions.Standard"/>.
    /// </summary>
    public MessagePackSerializerOptions SerializerOptions { get; set; } = MessagePackSerializerOptions.Standard;

    /// <summary>A token sent in the handshake, checked by servers that set
    /// <see cref="MuxServerOptions.AuthToken"/>. Defaults to <see langword="null"/> (none).</summary>
    public string? AuthToken { get; set; }

    /// <summary>Where the client logs connection events. Defaults to <see langword="null"/> (no logging).</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    internal void Validate()
    {
        if (SerializerOptions is null)
        {
            throw new InvalidOperationException("MuxClientOptions.SerializerOptions is null. Leave it at its default (MessagePackSerializerOptions.Standard) or set it to the options you serialize with.");
        }

        OptionsValidation.RequirePositive(CallTimeout, nameof(MuxClientOptions), nameof(CallTimeout), allowInfinite: true);
        OptionsValidation.RequirePositive(ConnectTimeout, nameof(MuxClientOptions), nameof(ConnectTimeout), allowInfinite: true);
        OptionsValidation.RequireFrameSize(MaxFrameSize, nameof(MuxClientOptions));
    }
}
