using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace Mux.LoadRunner;

/// <summary>
/// The round trip of one cache line between two cores: two threads, pinned to cores 0 and 1 where the OS lets them, hand a
/// value back and forth. A Mux call moves a few lines between cores (caller, writer, reader, continuation), so when a
/// virtual machine's cores sit far apart every per-call figure rises with this one, while a raw echo barely moves.
/// </summary>
internal static class CoreToCore
{
    private const int RoundTrips = 200_000;
    private const int Slot = 32;

    /// <summary>Nanoseconds per round trip, the least of three tries (a try another thread interrupts reads high), or null
    /// on a machine with one core.</summary>
    public static double? MeasureNanoseconds()
    {
        if (Environment.ProcessorCount < 2)
        {
            return null;
        }

        return Math.Min(Math.Min(MeasureOnce(), MeasureOnce()), MeasureOnce());
    }

    private static double MeasureOnce()
    {

        // Two lines apart from anything else: the array's header and neighbours never share the measured line.
        int[] line = new int[64];
        double result = 0;
        var answerer = new Thread(() => Answer(line)) { IsBackground = true, Name = "core-to-core answerer" };
        var asker = new Thread(() => result = Ask(line)) { IsBackground = true, Name = "core-to-core asker" };
        answerer.Start();
        asker.Start();
        asker.Join();
        answerer.Join();
        return Math.Round(result, 1);
    }

    // Optimized at once: a first call runs unoptimized code otherwise, whose loop would add its own time to the figure.
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static void Answer(int[] line)
    {
        Pin(1);
        for (int i = 0; i < RoundTrips; i++)
        {
            while (Volatile.Read(ref line[Slot]) != 1)
            {
            }

            Volatile.Write(ref line[Slot], 0);
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static double Ask(int[] line)
    {
        Pin(0);
        long start = Stopwatch.GetTimestamp();
        for (int i = 0; i < RoundTrips; i++)
        {
            Volatile.Write(ref line[Slot], 1);
            while (Volatile.Read(ref line[Slot]) != 0)
            {
            }
        }

        return Stopwatch.GetElapsedTime(start).TotalNanoseconds / RoundTrips;
    }

    // Linux only; elsewhere the threads run where the scheduler puts them (two spinning threads on two cores).
    private static void Pin(int core)
    {
        if (OperatingSystem.IsLinux())
        {
            ulong mask = 1UL << core;
            _ = SchedSetAffinity(0, (nint)sizeof(ulong), ref mask);
        }
    }

    [DllImport("libc", EntryPoint = "sched_setaffinity")]
    private static extern int SchedSetAffinity(int pid, nint size, ref ulong mask);
}
