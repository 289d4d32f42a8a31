namespace Mux;

/// <summary>
/// Decides which instance of a service serves each call. <see cref="MuxServer.AddService{TService}(TService)"/>
/// uses one shared instance; Mux.Hosting supplies an activator that resolves the implementation
/// from a dependency-injection scope per call.
/// </summary>
/// <typeparam name="TService">The service contract.</typeparam>
public abstract class MuxServiceActivator<TService> : IServiceActivator
    where TService : class
{
    Type IServiceActivator.ServiceType => typeof(TService);

    /// <summary>Runs <paramref name="handler"/> for <paramref name="call"/> on a service instance
    /// this activator provides, and releases the instance when the returned task completes.</summary>
    /// <param name="call">The call being served.</param>
    /// <param name="handler">The generated handler of the called method.</param>
    /// <returns>A task that completes when the handler has finished.</returns>
    public abstract ValueTask InvokeAsync(MuxServerCall call, MuxMethodHandler<TService> handler);
}

/// <summary>Lets <see cref="MuxServer.AddService{TService}(TService)"/> recognise an activator passed where C# inferred
/// the activator's own class as the service.</summary>

internal interface IServiceActivator
{
    Type ServiceType { get; }
}
