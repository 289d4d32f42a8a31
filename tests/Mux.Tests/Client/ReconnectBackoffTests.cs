using Mux.Client;

namespace Mux.Tests.Client;

public sealed class ReconnectBackoffTests
{
    [Fact]
    public void Delays_DoubleFromTheInitialDelay_UpToTheMaximum_EachShortenedByAtMost20Percent()
    {
        var backoff = new ReconnectBackoff(TimeSpan.FromMilliseconds(100), TimeSpan.FromMilliseconds(1000));
        double[] nominal = [100, 200, 400, 800, 1000, 1000];

        foreach (double expected in nominal)
        {
            Assert.InRange(backoff.NextDelay().TotalMilliseconds, expected * 0.8, expected);
        }
    }

    [Fact]
    public void Reset_StartsOverFromTheInitialDelay()
    {
        var backoff = new ReconnectBackoff(TimeSpan.FromMilliseconds(100), TimeSpan.FromSeconds(5));
        for (int i = 0; i < 5; i++)
        {
            backoff.NextDelay();
        }

        backoff.Reset();

        Assert.InRange(backoff.NextDelay().TotalMilliseconds, 80, 100);
    }
}
