namespace Mux.Hosting;

/// <summary>
/// A service the shared client of AddMuxClient serves to its server
/// (<see cref="MuxClientBuilder.AddService{TService, TImplementation}"/>): registered in DI, applied
/// by <see cref="MuxClientHolder"/> when it creates the client.
/// </summary>
/// <param name="ServiceType">The contract, to register each once.</param>
/// <param name="ImplementationType">What serves it, to refuse a second one.</param>
/// <param name="Add">Resolves the implementation and adds it to the client.</param>
internal sealed record MuxClientServiceRegistration(Type ServiceType, Type ImplementationType, Action<MuxClient, IServiceProvider> Add);
