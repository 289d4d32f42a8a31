using System.Net;

namespace Mux;

/// <summary>
/// Finds the server instances behind one logical service name, for a <see cref="MuxClient"/> that spreads its calls over
/// them (<see cref="MuxClientOptions.EndPointResolver"/>). The client asks every <see cref="MuxClientOptions.ResolveInterval"/>
/// and soon after one of its connections is lost; it connects to instances that appear and, once their calls have
/// finished, closes the connections to instances that disappear. Mux.Hosting implements it over
/// Microsoft.Extensions.ServiceDiscovery.
/// </summary>
public interface IMuxEndPointResolver
{
    /// <summary>
    /// Returns the current instances. An empty result or an exception (logged) leaves the client with the instances it
    /// has. While it knows none, it asks again on the reconnect backoff, and calls wait for an instance; one that finds
    /// none within its timeout fails with a <see cref="MuxConnectionException"/>
    /// (<see cref="MuxConnectionException.IsSafeToRetry"/>) that says what the last ask gave.
    /// </summary>

    /// <param name="cancellationToken">Fires when the client is disposed.</param>
    /// <returns>One endpoint per server instance.</returns>
    ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken);

    /// <summary>
    /// Completes when the instances may have changed since the last <see cref="ResolveAsync"/> (for example when the
    /// configuration they come from was reloaded): the client then asks again after at most
    /// <see cref="MuxClientOptions.ReconnectInitialDelay"/>, instead of at the next <see cref="MuxClientOptions.ResolveInterval"/>.
    /// The default never completes: the client asks on its period and after a lost connection only.
    /// </summary>
    /// <param name="cancellationToken">Fires when the client stops waiting (the next round, or dispose).</param>
    /// <returns>A task that completes on a change; one that fails or is cancelled is ignored.</returns>
    ValueTask WaitForChangeAsync(CancellationToken cancellationToken) => new(Task.Delay(Timeout.Infinite, cancellationToken));
}
