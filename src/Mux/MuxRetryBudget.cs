namespace Mux;

/// <summary>
/// How many calls a <see cref="MuxClient"/> may send again after a server reported it never ran them: a token bucket
/// in the style of Finagle's retry budget and gRPC's retry throttling. Every call deposits <see cref="Ratio"/> of a
/// retry, kept for ten seconds; every retry withdraws one. So when every server refuses, retries add at most
/// <see cref="Ratio"/> of the calls plus <see cref="MinRetriesPerSecond"/> to the load instead of multiplying it. Read
/// when the client is created.
/// </summary>

public sealed class MuxRetryBudget
{
    /// <summary>The retries each call earns, from 0 (only <see cref="MinRetriesPerSecond"/>) to 1000. Defaults to 0.2:
    /// one retry per five calls.</summary>
    public double Ratio { get; set; } = 0.2;

    /// <summary>Retries allowed each second whatever <see cref="Ratio"/> earned, so a client that makes few calls can still
    /// retry; at least 0. Defaults to 10.</summary>
    public int MinRetriesPerSecond { get; set; } = 10;

    internal void Validate()
    {
        if (!(Ratio >= 0 && Ratio <= 1000))
        {
            throw new InvalidOperationException(
                $"MuxClientOptions.RetryBudget.Ratio is {Ratio}; it must be from 0 to 1000 (0.2 lets one call in five be retried).");
        }

        if (MinRetriesPerSecond < 0)
        {
            throw new InvalidOperationException(
                $"MuxClientOptions.RetryBudget.MinRetriesPerSecond is {MinRetriesPerSecond}; it must be at least 0.");
        }
    }
}
