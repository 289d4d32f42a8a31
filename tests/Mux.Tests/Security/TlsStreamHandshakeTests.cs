using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Security;

/// <summary>
/// A TLS handshake over a stream handed to MuxServer.AcceptAsync whose reads do not heed their
/// cancellation token (a stream that wraps a blocking read, say) but end when it is disposed, as
/// the connection's own reads rely on. The handshake's timeout and the server's stop must still
/// end it: the accept fails, the stream is closed, and the stop does not wait for ever.
/// </summary>
public sealed class TlsStreamHandshakeTests
{
    [Fact]
    public async Task AHandshakeThatNeverFinishes_OverAStreamDeafToCancellation_FailsTheAcceptAtTheTimeout()
    {
        var clock = new FakeTimeProvider();
        using var logs = new FakeLoggerProvider();
        using ILoggerFactory loggerFactory = LoggerFactory.Create(builder => builder.AddProvider(logs));
        var server = new MuxServer(new MuxServerOptions { Tls = TestCertificates.ServerTls(), HandshakeTimeout = TimeSpan.FromSeconds(5), TimeProvider = clock, LoggerFactory = loggerFactory });
        server.AddService<ITestService>(new TestService());
        var stream = new DeafStream();

        Task accept = server.AcceptAsync(stream);
        await stream.ReadStarted.Task.WaitAsync(TestHost.Patience);
        clock.Advance(TimeSpan.FromSeconds(5));

        await Assert.ThrowsAsync<MuxConnectionException>(() => accept.WaitAsync(TestHost.Patience));
        Assert.True(stream.IsDisposed);
        FakeLogRecord failed = logs.Collector.GetSnapshot().Single(r => r.Id.Name == "TlsHandshakeFailed");
        Assert.Equal("The client did not complete the TLS handshake within 5 s (MuxServerOptions.HandshakeTimeout).", Assert.IsType<TimeoutException>(failed.Exception).Message);
        await server.DisposeAsync().AsTask().WaitAsync(TestHost.Patience); // Not `await using`: it waited for the handshake for ever.
    }

    [Fact]
    public async Task AStop_EndsAHandshakeThatNeverFinishes_OverAStreamDeafToCancellation()
    {
        var server = new MuxServer(new MuxServerOptions { Tls = TestCertificates.ServerTls(), HandshakeTimeout = Timeout.InfiniteTimeSpan });
        server.AddService<ITestService>(new TestService());
        var stream = new DeafStream();

        Task accept = server.AcceptAsync(stream);
        await stream.ReadStarted.Task.WaitAsync(TestHost.Patience);

        await server.StopAsync().WaitAsync(TestHost.Patience);
        await Assert.ThrowsAsync<ObjectDisposedException>(() => accept.WaitAsync(TestHost.Patience)); // As StartAsync, which a stop ends.
        Assert.True(stream.IsDisposed);
    }

    /// <summary>A client that never sends its first TLS record, behind a stream whose reads ignore
    /// their token and end only when it is disposed.</summary>
    private sealed class DeafStream : Stream
    {
        private readonly TaskCompletionSource<int> _disposed = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource ReadStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public bool IsDisposed => _disposed.Task.IsCompleted;

        public override bool CanRead => true;

        public override bool CanWrite => true;

        public override bool CanSeek => false;

        public override long Length => throw new NotSupportedException();

        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
        {
            ReadStarted.TrySetResult();
            return new ValueTask<int>(_disposed.Task);
        }

        public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
            ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

        public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer, offset, count, CancellationToken.None).GetAwaiter().GetResult();

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) => ValueTask.CompletedTask;

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) => Task.CompletedTask;

        public override void Write(byte[] buffer, int offset, int count)
        {
        }

        public override void Flush()
        {
        }

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            _disposed.TrySetException(new ObjectDisposedException(nameof(DeafStream)));
            base.Dispose(disposing);
        }
    }
}
