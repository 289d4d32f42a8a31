namespace Mux;

/// <summary>Services the client serves to its server: calls the server starts on the same connection.</summary>
public sealed partial class MuxClient
{
    /// <summary>
    /// Serves <typeparamref name="TService"/> to the server: its handlers can call it back on this
    /// client's connection (<see cref="MuxCallContext.Client"/>, then
    /// <see cref="MuxRemoteClient.CreateProxy{TService}"/>). Calls run on the thread pool, never on
    /// the connection's reader loop, so a slow one holds up nothing else; their token fires when
    /// the server cancels the call (its caller gave up or it timed out) or the connection is lost.
    /// The service stays added across reconnects, and may be added before or after the client connects.
    /// </summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface.</typeparam>
    /// <param name="implementation">The instance that serves every call; it must be thread-safe
    /// (calls run concurrently).</param>
    /// <returns>This client, for chaining.</returns>
    /// <exception cref="InvalidOperationException">No dispatcher is registered for the interface,
    /// or the client already serves a method with one of its ids (the same service added twice).</exception>
    public MuxClient AddService<TService>(TService implementation)
        where TService : class
    {
        ArgumentNullException.ThrowIfNull(implementation);
        _services.Add(implementation);
        return this;
    }
}
