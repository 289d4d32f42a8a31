namespace Mux.Tests.Infrastructure;

/// <summary>For tests that block thread-pool threads on purpose: the pool grows slowly past its
/// minimum (about one thread per second when starved), so other tests running in parallel would
/// stall behind the blocked threads. Raising the minimum up front keeps them unaffected.</summary>
public static class PoolThreads
{
    private static readonly Lock s_lock = new();

    /// <summary>Makes sure the pool creates <paramref name="blocked"/> more threads than cores
    /// without delay, on top of what the other tests of the run use.</summary>
    public static void EnsureSpare(int blocked)
    {
        lock (s_lock)
        {
            ThreadPool.GetMinThreads(out int workers, out int io);
            int wanted = (Environment.ProcessorCount * 4) + blocked;
            if (workers < wanted)
            {
                ThreadPool.SetMinThreads(wanted, io);
            }
        }
    }
}
