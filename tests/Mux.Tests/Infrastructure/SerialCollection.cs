namespace Mux.Tests.Infrastructure;

/// <summary>
/// Tests that must not share the machine with other tests: the race stress tests (they watch the
/// process-wide unobserved-exception event, and their load would starve timing-sensitive
/// neighbours), tests that block thread-pool threads on purpose, and tests that move hundreds of
/// MiB (the 1 GiB stream, the 100 MiB echo): beside others they would take the CPU and memory
/// their neighbours wait on, and wait on them in turn. xunit runs this collection on its own,
/// after the parallel ones.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class SerialCollection
{
    public const string Name = "Serial";
}
