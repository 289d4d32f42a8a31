using Microsoft.Extensions.Logging;

namespace Mux.Transport;

/// <summary>Log messages of the transports (TLS and socket set-up), with fixed event ids 50–59.</summary>
internal static partial class TransportLog
{
    [LoggerMessage(EventId = 50, EventName = "TlsHandshakeFailed", Level = LogLevel.Information,
        Message = "The TLS handshake with {Connection} failed; the connection was closed.")]
    public static partial void TlsHandshakeFailed(ILogger logger, string connection, Exception error);

    [LoggerMessage(EventId = 51, EventName = "AuthTokenWithoutTls", Level = LogLevel.Warning,
        Message = "{Options}.AuthToken is set but {Options}.Tls is not: the token crosses the network to {EndPoint} in plaintext. " +
            "Set {Options}.Tls to encrypt the connection.")]
    public static partial void AuthTokenWithoutTls(ILogger logger, string options, string endPoint);

    [LoggerMessage(EventId = 52, EventName = "TlsEstablished", Level = LogLevel.Debug,
        Message = "TLS connection {Connection} established: {Protocol}, {CipherSuite}.")]
    public static partial void TlsEstablished(
        ILogger logger, string connection, System.Security.Authentication.SslProtocols protocol, System.Net.Security.TlsCipherSuite cipherSuite);
}
