using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Time.Testing;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Client.Balancing;

/// <summary>
/// <see cref="MuxClient.ConnectAsync(MuxClientOptions, CancellationToken)"/> over several instances
/// none of which can be reached fails the way a connect fails: its message names ConnectTimeout
/// (the wait it spent) and why the instances could not be reached, never a call that was not sent
/// within CallTimeout, nor a client that is merely "closed".
/// </summary>
public sealed class BalancedConnectTests
{
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task ConnectAsync_ToInstancesThatAreAllDown_FailsWithWhyItCouldNotConnect(bool autoReconnect)
    {
        // The clock moves past ConnectTimeout only once both instances have failed an attempt: on
        // the real one, a loaded machine could spend the 300 ms before either connect was refused.
        var clock = new FakeTimeProvider();
        var attempts = new FailedAttempts();
        var options = new MuxClientOptions
        {
            EndPoints = { ReconnectTests.FreeLoopbackEndPoint(), ReconnectTests.FreeLoopbackEndPoint() },
            TimeProvider = clock,
            LoggerFactory = attempts,
            ConnectTimeout = TimeSpan.FromMilliseconds(300),
            CallTimeout = TimeSpan.FromHours(1),
            AutoReconnect = autoReconnect,
            ReconnectInitialDelay = TimeSpan.FromMilliseconds(20),
            ReconnectMaxDelay = TimeSpan.FromMilliseconds(40),
        };

        Task<MuxClient> connecting = MuxClient.ConnectAsync(options);
        if (autoReconnect)
        {
            await Hosts.WaitUntilAsync(() => attempts.Count >= 2, "both instances have failed an attempt to connect");
            clock.Advance(options.ConnectTimeout);
        }

        var failed = await Assert.ThrowsAsync<MuxConnectionException>(() => connecting.WaitAsync(TestHost.Patience));

        Assert.StartsWith("Could not connect to any instance of the Mux server (", failed.Message, StringComparison.Ordinal);
        if (autoReconnect)
        {
            Assert.Contains("within 300 ms (MuxClientOptions.ConnectTimeout).", failed.Message, StringComparison.Ordinal);
        }

        Assert.Contains("None of its 2 instance(s) had a usable connection. The last attempt to connect (127.0.0.1:", failed.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("CallTimeout", failed.Message, StringComparison.Ordinal);
        Assert.DoesNotContain("not sent", failed.Message, StringComparison.Ordinal);
        Assert.Contains("Could not connect to the Mux server at 127.0.0.1:", Assert.IsType<MuxConnectionException>(failed.InnerException).Message, StringComparison.Ordinal);
    }

    /// <summary>Counts the keepers' first failed connect attempts (ConnectFailed, logged once each
    /// has recorded why).</summary>
    private sealed class FailedAttempts : LogHook
    {
        private int _count;

        public int Count => Volatile.Read(ref _count);

        public override void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (eventId.Name == "ConnectFailed")
            {
                Interlocked.Increment(ref _count);
            }
        }
    }
}
