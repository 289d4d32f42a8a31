using System.Diagnostics;
using Mux.Connection;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Races;

/// <summary>
/// The count of a call table is what the drain after GoAway reads: at 0, the client closes the
/// connection, so a count that reads low while a call the peer promised to serve is still waiting
/// fails that call. A call must be counted before it is published and uncounted after it is taken
/// out: counted after, a remover on another core could take it and uncount it first, and a read in
/// between came out one short. That window is a few instructions wide, so this is a stress test:
/// one thread adds a call, another removes it, over and over, each on a core of its own, while a
/// third reads the count on the adder's core (which preempts it now and then).
/// </summary>
[Collection(SerialCollection.Name)]
public sealed class CallCountUnderChurnTests
{
    private const int Expected = 32;

    private static readonly TimeSpan Churn = TimeSpan.FromSeconds(5);

    private sealed class Entry(uint callId) : ICallTableEntry
    {
        public uint CallId { get; } = callId;
    }

    [Fact]
    public async Task TheCount_NeverReadsLow_WhileACallIsAddedOnOneCoreAndRemovedOnAnother()
    {
        // Call 1 stays in throughout: a call the peer promised to serve after GoAway. Call 2 comes
        // and goes: added again as soon as the remover has taken it out. So the count is 1 or 2.
        var table = new CallTable<Entry>(Expected);
        Assert.True(table.TryAdd(new Entry(1), out _));
        var churned = new Entry(2);
        bool stop = false;
        long rounds = 0;
        long reads = 0;
        bool low = false;
        Task adder = Run(cpu: 0, () =>
        {
            SpinWait spin = default;
            while (!Volatile.Read(ref stop))
            {
                if (table.TryAdd(churned, out _))
                {
                    rounds++;
                    spin = default;
                }
                else
                {
                    spin.SpinOnce(sleep1Threshold: -1); // Not taken out yet.
                }
            }
        });
        Task remover = Run(cpu: 1, () =>
        {
            SpinWait spin = default;
            while (!Volatile.Read(ref stop))
            {
                if (table.TryRemove(churned.CallId) is not null)
                {
                    spin = default;
                }
                else
                {
                    spin.SpinOnce(sleep1Threshold: -1); // Not added yet.
                }
            }
        });
        Task reader = Run(cpu: 0, () =>
        {
            while (!Volatile.Read(ref stop))
            {
                if (table.Count < 1)
                {
                    low = true;
                    return;
                }

                reads++;
            }
        });

        var churning = Stopwatch.StartNew();
        await Task.WhenAny(reader, adder, remover, Task.Delay(Churn));
        Volatile.Write(ref stop, true);
        await Task.WhenAll(adder, remover, reader).WaitAsync(TestHost.Patience);
        Assert.False(low, $"The count read 0 with call 1 in the table, after {reads} reads that did not, while call 2 was added and removed {rounds} times in {churning.Elapsed.TotalSeconds:F1} s.");

        table.TryRemove(churned.CallId); // If it was added as the churn stopped.
        Assert.Equal(1, table.Count);
    }

    [System.Runtime.InteropServices.DllImport("libc", SetLastError = true)]
    private static extern int sched_setaffinity(int pid, nint size, ref ulong mask);

    /// <summary>Runs <paramref name="action"/> on a thread of its own, kept to <paramref name="cpu"/>
    /// where the system lets a thread choose (Linux); elsewhere the test only fails less often.</summary>
    private static Task Run(int cpu, Action action) =>
        Task.Factory.StartNew(
            () =>
            {
                if (OperatingSystem.IsLinux() && Environment.ProcessorCount > 1)
                {
                    ulong mask = 1UL << cpu;
                    _ = sched_setaffinity(0, sizeof(ulong), ref mask);
                }

                action();
            },
            CancellationToken.None,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
}
