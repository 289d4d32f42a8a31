namespace Mux.Tests.Infrastructure;

/// <summary>
/// Tests that must not share the machine with other tests: the race stress tests (they watch the
/// process-wide unobserved-exception event, and their load would starve timing-sensitive
/// neighbours) and tests that block thread-pool threads on purpose. xunit runs this collection
/// on its own, after the parallel ones.
/// </summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class SerialCollection
{
    public const string Name = "Serial";
}
