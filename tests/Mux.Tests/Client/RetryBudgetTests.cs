using Microsoft.Extensions.Time.Testing;
using Mux.Client;

namespace Mux.Tests.Client;

/// <summary>The token bucket behind MuxClientOptions.RetryBudget, on a fake clock.</summary>
public class RetryBudgetTests
{
    private readonly FakeTimeProvider _clock = new(DateTimeOffset.UnixEpoch.AddDays(1));

    [Fact]
    public void WithNoCalls_OnlyTheReserveOfMinRetriesPerSecondOverTheWindowIsSpent()
    {
        var budget = new RetryBudget(new MuxRetryBudget(), _clock);
        Assert.Equal(10 * RetryBudget.WindowSeconds, WithdrawAll(budget));
    }

    [Fact]
    public void EachCallEarnsRatioOfARetry()
    {
        var budget = new RetryBudget(new MuxRetryBudget { Ratio = 0.2, MinRetriesPerSecond = 0 }, _clock);
        for (int i = 0; i < 1000; i++)
        {
            budget.Deposit(_clock.GetTimestamp());
        }

        Assert.Equal(200, WithdrawAll(budget));
    }

    [Fact]
    public void DepositsAndRetries_LeaveTheWindowAfterTenSeconds()
    {
        var budget = new RetryBudget(new MuxRetryBudget { Ratio = 0.5, MinRetriesPerSecond = 1 }, _clock);
        for (int i = 0; i < 100; i++)
        {
            budget.Deposit(_clock.GetTimestamp());
        }

        Assert.Equal(50 + 10, WithdrawAll(budget));
        _clock.Advance(TimeSpan.FromSeconds(5));
        Assert.Equal(0, WithdrawAll(budget)); // Still within the window: the calls and the retries both count.

        _clock.Advance(TimeSpan.FromSeconds(5));
        Assert.Equal(10, WithdrawAll(budget)); // The calls and the retries have left it: only the reserve again.
    }

    [Fact]
    public void ARatioOfZeroAndNoMinimum_AllowsNoRetry()
    {
        var budget = new RetryBudget(new MuxRetryBudget { Ratio = 0, MinRetriesPerSecond = 0 }, _clock);
        budget.Deposit(_clock.GetTimestamp());
        Assert.False(budget.TryWithdraw(_clock.GetTimestamp()));
    }

    [Theory]
    [InlineData(-0.1, 10)]
    [InlineData(1000.5, 10)]
    [InlineData(double.NaN, 10)]
    [InlineData(0.2, -1)]
    public void AnInvalidBudget_IsRefusedWhenTheClientIsMade(double ratio, int minimum)
    {
        var options = new MuxClientOptions
        {
            EndPoint = new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 1),
            RetryBudget = new MuxRetryBudget { Ratio = ratio, MinRetriesPerSecond = minimum },
        };
        InvalidOperationException refused = Assert.Throws<InvalidOperationException>(() => MuxClient.Create(options));
        Assert.Contains("MuxClientOptions.RetryBudget.", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void TheDefault_IsARatioOfOneFifthAndTenRetriesASecond()
    {
        MuxRetryBudget budget = new MuxClientOptions().RetryBudget!;
        Assert.Equal(0.2, budget.Ratio);
        Assert.Equal(10, budget.MinRetriesPerSecond);
    }

    private int WithdrawAll(RetryBudget budget)
    {
        int withdrawn = 0;
        while (budget.TryWithdraw(_clock.GetTimestamp()))
        {
            Assert.True(++withdrawn < 100_000, "The budget never ran out.");
        }

        return withdrawn;
    }
}
