using System.Net;
using Microsoft.Extensions.Logging;
using Mux.Connection;
using Mux.Serialization;

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

    /// <summary>A token sent in the handshake, checked by servers that set
    /// <see cref="MuxServerOptions.AuthToken"/>. Defaults to <see langword="null"/> (none).</summary>
    public string? AuthToken { get; set; }

    /// <summary>Where the client logs connection events. Defaults to <see langword="null"/> (no logging).</summary>
    public ILoggerFactory? LoggerFactory { get; set; }

    internal void Validate()
    {
        OptionsValidation.RequirePositive(CallTimeout, nameof(MuxClientOptions), nameof(CallTimeout), allowInfinite: true);
        OptionsValidation.RequirePositive(ConnectTimeout, nameof(MuxClientOptions), nameof(ConnectTimeout), allowInfinite: true);
        OptionsValidation.RequireFrameSize(MaxFrameSize, nameof(MuxClientOptions));
    }
}
