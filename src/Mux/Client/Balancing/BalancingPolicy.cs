namespace Mux.Client.Balancing;

/// <summary>How a call picks its server instance among several.</summary>
internal enum BalancingPolicy
{
    /// <summary>The instance with the fewest calls pending; ties go to a random one.</summary>
    LeastPending,

    /// <summary>Two instances at random, the one with fewer calls pending.</summary>
    PowerOfTwoChoices,
}
