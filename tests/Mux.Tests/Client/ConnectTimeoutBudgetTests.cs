using System.Net.Security;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;
using Mux.Tests.Security;
using Mux.Transport;

namespace Mux.Tests.Client;

/// <summary>
/// <see cref="MuxClientOptions.ConnectTimeout"/> bounds connecting and the handshake together, as
/// its documentation says: a server slow at TLS and then slow to answer Hello is given one timeout,
/// not one for each. The server is hand-written; the clock is fake and moves only by hand, and the
/// timeout is long (5 min) so that the real clock never matters.
/// </summary>
public sealed class ConnectTimeoutBudgetTests
{
    private static readonly TimeSpan ConnectTimeout = TimeSpan.FromMinutes(5);

    [Fact]
    public Task AServerSlowAtTlsAndThenAtTheHandshake_FailsTheConnectAtConnectTimeout_CountedFromTheStart() =>
        AssertOneTimeoutAsync(static (endPoint, options) => MuxClient.ConnectAsync(endPoint, options));

    [Fact]
    public Task OverAStreamYouConnected_TlsAndTheHandshakeShareOneConnectTimeout_Too() =>
        AssertOneTimeoutAsync(static (endPoint, options) =>
        {
            // Connected here, on the test's thread (a listener's backlog takes it at once), so that the
            // client's clock starts before the test moves it.
            var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            socket.Connect(endPoint);
            return MuxClient.ConnectAsync(new NetworkStream(socket, ownsSocket: true), options);
        });

    private static async Task AssertOneTimeoutAsync(Func<System.Net.EndPoint, MuxClientOptions, Task<MuxClient>> connect)
    {
        var clock = new FakeTimeProvider();
        TcpListener listener = RawMuxPeer.Listen();
        try
        {
            Task<MuxClient> connecting = connect(listener.LocalEndpoint, new MuxClientOptions
            {
                Tls = TestCertificates.ClientTlsTrusting(),
                TimeProvider = clock,
                KeepAliveInterval = Timeout.InfiniteTimeSpan,
                ConnectTimeout = ConnectTimeout,
            });
            using Socket socket = await listener.AcceptSocketAsync().WaitAsync(TestHost.Patience);

            // Three fifths of the timeout pass before the server takes up TLS.
            clock.Advance(ConnectTimeout * 0.6);
            await using var tls = new SslStream(new NetworkStream(socket, ownsSocket: false));
            SslServerAuthenticationOptions serverTls = TestCertificates.ServerTls();
            serverTls.ApplicationProtocols = [TlsHandshake.Protocol];
            await tls.AuthenticateAsServerAsync(serverTls).WaitAsync(TestHost.Patience);
            Assert.True(await tls.ReadAsync(new byte[64]).AsTask().WaitAsync(TestHost.Patience) > 0, "The client sent no Hello.");

            // Three fifths more without a HelloAck: past the timeout since connecting began. Before,
            // the handshake had a whole ConnectTimeout of its own, and the connect went on waiting.
            clock.Advance(ConnectTimeout * 0.6);
            MuxConnectionException failed = await Assert.ThrowsAsync<MuxConnectionException>(() => connecting.WaitAsync(TestHost.Patience));
            Assert.Equal(MuxCloseReason.HandshakeTimeout, failed.Reason);
            Assert.Contains("MuxClientOptions.ConnectTimeout", failed.Message, StringComparison.Ordinal);
        }
        finally
        {
            listener.Stop();
        }
    }
}
