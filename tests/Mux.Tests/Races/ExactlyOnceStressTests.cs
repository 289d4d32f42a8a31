using System.Diagnostics;
using Mux.Tests.Infrastructure;
using Xunit.Abstractions;
using Xunit.Sdk;

namespace Mux.Tests.Races;

/// <summary>
/// Every call completes exactly once, whatever races it: its response, the caller's cancellation,
/// the call timeout and the loss of the connection. Bounded (a few seconds), with a seed that
/// decides every random choice; a failure names the seed, and MUX_STRESS_SEED replays its plan.
/// </summary>
[Collection(SerialCollection.Name)]
public sealed class ExactlyOnceStressTests(ITestOutputHelper output)
{
    private const int CallsPerRound = 500;
    private const int Rounds = 6;
    private static readonly TimeSpan CallTimeout = TimeSpan.FromMilliseconds(100);

    [Theory]
    [InlineData(TransportKind.InMemory)]
    [InlineData(TransportKind.Tcp)]
    public async Task RacingResponsesCancellationsTimeoutsAndKills_EndEveryCallExactlyOnce_WithTheOutcomeThatHappened(TransportKind kind)
    {
        string? fixedSeed = Environment.GetEnvironmentVariable("MUX_STRESS_SEED");
        int seed = fixedSeed is null ? Random.Shared.Next() : int.Parse(fixedSeed, System.Globalization.CultureInfo.InvariantCulture);
        output.WriteLine($"seed {seed} (set MUX_STRESS_SEED={seed} to replay this plan)");
        var random = new Random(seed);
        using var unobserved = new UnobservedExceptions();
        var tally = new Dictionary<string, int>();
        try
        {
            for (int round = 0; round < Rounds; round++)
            {
                // Odd rounds lose the connection in the middle of the burst; even rounds keep it,
                // so that what they leave behind (pending calls, running handlers) is visible.
                await RunRoundAsync(kind, random, kill: round % 2 == 1, tally);
            }

            await AFreshConnectionGetsEveryResultRightAsync(kind);
            unobserved.AssertNone();

            // The run raced what it claims to: every kind of ending happened.
            output.WriteLine(string.Join(", ", tally.OrderBy(p => p.Key).Select(p => $"{p.Key} {p.Value}")));
            foreach (string ending in new[] { nameof(Int32), nameof(OperationCanceledException), nameof(TimeoutException), nameof(MuxConnectionException) })
            {
                Assert.True(tally.GetValueOrDefault(ending) > 0, $"No call ended with {ending}: {string.Join(", ", tally)}");
            }
        }
        catch (Exception ex)
        {
            throw new XunitException($"The exactly-once stress run with seed {seed} failed (set MUX_STRESS_SEED={seed} to replay its plan): {ex}");
        }
    }

    private static async Task RunRoundAsync(TransportKind kind, Random random, bool kill, Dictionary<string, int> tally)
    {
        await using TestHost host = await Hosts.StartAsync(kind, clientOptions: new MuxClientOptions { CallTimeout = CallTimeout });
        var plans = new CallPlan[CallsPerRound];
        for (int i = 0; i < plans.Length; i++)
        {
            plans[i] = CallPlan.Draw(i, random);
        }

        // Set just before the connection is killed: a connection failure seen earlier is a bug.
        int killStarted = 0;
        bool killByClient = random.Next(2) == 0;
        int killAfterMs = random.Next(10, 60);

        var outcomes = new Outcome?[plans.Length];
        Task[] calls = new Task[plans.Length];
        for (int i = 0; i < plans.Length; i++)
        {
            calls[i] = RunCallAsync(host.RaceProxy, plans[i], outcomes, () => Volatile.Read(ref killStarted) == 1);
        }

        if (kill)
        {
            await Task.Delay(killAfterMs);
            Volatile.Write(ref killStarted, 1);
            if (killByClient)
            {
                await host.Client.DisposeAsync().AsTask().WaitAsync(TestHost.Patience);
            }
            else
            {
                // The server closes the connection without waiting for a single handler.
                await host.Server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(TestHost.Patience);
            }
        }

        await Task.WhenAll(calls).WaitAsync(TestHost.Patience);

        for (int i = 0; i < plans.Length; i++)
        {
            Outcome outcome = outcomes[i] ?? throw new XunitException($"Call {i} ended without recording an outcome.");
            CheckOutcome(plans[i], outcome, host.Race, kill);
            string ending = outcome.Error is null ? nameof(Int32) : outcome.Error is OperationCanceledException ? nameof(OperationCanceledException) : outcome.Error.GetType().Name;
            tally[ending] = tally.GetValueOrDefault(ending) + 1;
            plans[i].Cancellation?.Dispose();
        }

        Assert.Equal(0, host.Client.PendingCalls);
        if (!kill)
        {
            // Every handler ends: a timed-out or cancelled call told the server (Cancel frame),
            // and the handlers that were waiting for their token saw it fire.
            await Hosts.WaitUntilAsync(() => host.Race.RespondRunning == 0, "every Respond handler has ended");
            Assert.True(host.Client.IsConnected, "The connection closed although nobody killed it.");

            // And it still answers: a call the 100 ms timeout cuts on a slow machine is made again,
            // with the next id (its handler may have run, and Respond fails an id that runs twice).
            int id = CallsPerRound - 1;
            int answered = await Hosts.AnswerDespiteAShortCallTimeoutAsync(() => host.RaceProxy.Respond(++id, 0));
            Assert.Equal(id, answered);
        }
    }

    private static async Task RunCallAsync(IRaceService proxy, CallPlan plan, Outcome?[] outcomes, Func<bool> killStarted)
    {
        // The clock only proves a timeout did not fire before its deadline (an order, not a speed).
        long started = Stopwatch.GetTimestamp();
        Outcome outcome;
        try
        {
            int result = await proxy.Respond(plan.Id, plan.DelayMilliseconds, plan.Cancellation?.Token ?? default);
            outcome = new Outcome(result, null, Stopwatch.GetElapsedTime(started), false);
        }
        catch (Exception ex)
        {
            outcome = new Outcome(null, ex, Stopwatch.GetElapsedTime(started), killStarted());
        }

        if (Interlocked.CompareExchange(ref outcomes[plan.Id], outcome, null) is not null)
        {
            throw new XunitException($"Call {plan.Id} ended twice.");
        }
    }

    private static void CheckOutcome(CallPlan plan, Outcome outcome, RaceService server, bool killed)
    {
        string call = $"Call {plan.Id} (delay {plan.DelayMilliseconds} ms, cancel after {plan.CancelAfterMilliseconds?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "never"} ms)";
        switch (outcome.Error)
        {
            case null:
                Assert.True(outcome.Result == plan.Id, $"{call} returned {outcome.Result}: another call's result.");
                Assert.True(plan.DelayMilliseconds >= 0, $"{call} returned a result although its handler never returns one.");
                Assert.True(server.Responded(plan.Id), $"{call} returned a result its handler did not produce.");
                break;
            case OperationCanceledException canceled:
                if (plan.Cancellation is not { IsCancellationRequested: true })
                {
                    Assert.Fail($"{call} was canceled although its caller did not cancel it: {canceled}");
                }

                Assert.True(canceled.CancellationToken == plan.Cancellation!.Token, $"{call} was canceled with a token that is not its caller's.");
                break;
            case TimeoutException timeout:
                Assert.Contains("MuxClientOptions.CallTimeout", timeout.Message, StringComparison.Ordinal);
                // The deadline is kept on a coarse clock: allow half the timeout, but never "at once".
                Assert.True(outcome.Elapsed >= CallTimeout / 2, $"{call} timed out after {outcome.Elapsed.TotalMilliseconds} ms, before its deadline of {CallTimeout.TotalMilliseconds} ms.");
                break;
            case MuxConnectionException lost:
                if (!killed || !outcome.KillHadStarted)
                {
                    Assert.Fail($"{call} failed with a connection error before the connection was killed: {lost}");
                }

                Assert.NotEqual(MuxCloseReason.None, lost.Reason);
                break;
            default:
                throw new XunitException($"{call} ended with an outcome nothing caused: {outcome.Error}");
        }
    }

    /// <summary>Calls that reuse pooled call objects of the rounds above: a call completed twice
    /// there would complete one of these with a stranger's result or exception.</summary>
    private static async Task AFreshConnectionGetsEveryResultRightAsync(TransportKind kind)
    {
        await using TestHost host = await Hosts.StartAsync(kind);
        int[] results = await Task.WhenAll(Enumerable.Range(0, CallsPerRound).Select(i => host.RaceProxy.Respond(i, i % 3))).WaitAsync(TestHost.Patience);
        Assert.Equal(Enumerable.Range(0, CallsPerRound), results);
        Assert.Equal(0, host.Client.PendingCalls);
    }

    /// <summary>What one call of a round does: how long its handler takes (negative: until its
    /// token fires) and whether its caller cancels it.</summary>
    private sealed record CallPlan(int Id, int DelayMilliseconds, int? CancelAfterMilliseconds, CancellationTokenSource? Cancellation)
    {
        public static CallPlan Draw(int id, Random random)
        {
            int delay = random.Next(100) switch
            {
                < 40 => 0, // answers at once
                < 70 => random.Next(1, 40), // answers soon
                < 85 => random.Next(80, 120), // answers around the call timeout: races it
                _ => -1, // never answers: ends by cancellation, timeout or the kill
            };
            int? cancelAfter = random.Next(100) < 30 ? random.Next(0, 80) : null;
            CancellationTokenSource? cancellation = null;
            if (cancelAfter is int after)
            {
                cancellation = new CancellationTokenSource();
                cancellation.CancelAfter(after);
            }

            return new CallPlan(id, delay, cancelAfter, cancellation);
        }
    }

    private sealed record Outcome(int? Result, Exception? Error, TimeSpan Elapsed, bool KillHadStarted);
}
