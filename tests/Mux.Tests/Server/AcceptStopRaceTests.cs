using System.IO.Pipelines;
using Microsoft.Extensions.Logging;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// A connection handed to the server (Accept, AcceptAsync) while a stop runs: either the accept is
/// refused with ObjectDisposedException, or the stop drains and closes the connection before it
/// returns. Nothing may be accepted, served or left open once StopAsync has returned.
/// </summary>
public sealed class AcceptStopRaceTests
{
    /// <summary>
    /// The stop here runs inside the accept, after the accept has seen the server running and
    /// before its connection is listed (on the server's clock, which the accept reads in between),
    /// as a host's shutdown on another thread can. The stop used to find no connection, return, and
    /// leave the accept to list and start its connection on a stopped server: the accept returned as
    /// if served, ActiveConnections read 1 after StopAsync had returned, and nothing waited for the close.
    /// </summary>
    [Theory]
    [InlineData("pipe")]
    [InlineData("stream")]
    public async Task AStopDuringAnAccept_EitherRefusesItOrDrainsItBeforeReturning(string kind)
    {
        var clock = new HookedClock();
        var log = new AcceptedLog();
        var server = new MuxServer(new MuxServerOptions { TimeProvider = clock, LoggerFactory = log });
        server.AddService<ITestService>(new TestService());
        server.StartWithoutListener();
        var toServer = new Pipe();
        var toClient = new Pipe();
        Task? stop = null;
        clock.OnNextTimestamp(() =>
        {
            stop = server.StopAsync();
            log.Stop = stop;
        });

        Exception? acceptError = kind == "pipe"
            ? Record.Exception(() => server.Accept(new PipePair(toServer.Reader, toClient.Writer)))
            : await Record.ExceptionAsync(() => server.AcceptAsync(new DuplexStream(toServer.Reader.AsStream(), toClient.Writer.AsStream())));
        Assert.NotNull(stop);
        await stop.WaitAsync(TestHost.Patience);

        Assert.False(log.AcceptedAfterTheStop, "A connection was accepted after StopAsync had returned.");
        Assert.Equal(0, server.ActiveConnections);
        if (acceptError is null)
        {
            // Served, so the stop drained it: the server has ended its side.
            Assert.True(log.Accepted);
            Assert.True(await ReadsToTheEndAsync(toClient.Reader), "The stop returned with the connection still open.");
        }
        else
        {
            var refused = Assert.IsType<ObjectDisposedException>(acceptError);
            Assert.Equal(nameof(MuxServer), refused.ObjectName);
            Assert.False(log.Accepted);
        }
    }

    private static async Task<bool> ReadsToTheEndAsync(PipeReader reader)
    {
        while (true)
        {
            ValueTask<ReadResult> read = reader.ReadAsync();
            if (!read.IsCompleted)
            {
                return false; // Still open once the stop has returned.
            }

            ReadResult result = await read;
            reader.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                return true;
            }
        }
    }

    /// <summary>The system clock, which runs an action on the next reading of the time.</summary>
    private sealed class HookedClock : TimeProvider
    {
        private Action? _next;

        public void OnNextTimestamp(Action action) => Volatile.Write(ref _next, action);

        public override long GetTimestamp()
        {
            Interlocked.Exchange(ref _next, null)?.Invoke();
            return base.GetTimestamp();
        }
    }

    /// <summary>A logger factory that notes whether the server logged a connection as accepted, and
    /// whether that came after <see cref="Stop"/> had completed.</summary>
    private sealed class AcceptedLog : LogHook
    {
        private volatile bool _accepted;
        private volatile bool _acceptedAfterTheStop;

        public Task? Stop { get; set; }

        public bool Accepted => _accepted;

        public bool AcceptedAfterTheStop => _acceptedAfterTheStop;

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Name == "ConnectionAccepted")
            {
                _accepted = true;
                _acceptedAfterTheStop |= Stop is { IsCompleted: true };
            }
        }
    }

    private sealed class PipePair(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
