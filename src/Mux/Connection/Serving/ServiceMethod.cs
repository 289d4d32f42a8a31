
namespace Mux.Connection;

/// <summary>A method bound to the implementation that serves it; the server's dispatch table holds these.</summary>
internal abstract class ServiceMethod(string serviceName, uint id, string methodName)
{
    public uint Id { get; } = id;

    // "IService.Method", for messages and logs.
    public string Name { get; } = MuxServiceRegistry.ShortServiceName(serviceName) + "." + methodName;

    public abstract ValueTask InvokeAsync(MuxServerCall call);
}

internal sealed class SingletonServiceMethod<TService>(string serviceName, MuxMethodDefinition<TService> method, TService implementation)
    : ServiceMethod(serviceName, method.Id, method.Name)
    where TService : class
{
    private readonly MuxMethodHandler<TService> _handler = method.Handler;
    private readonly TService _implementation = implementation;

    public override ValueTask InvokeAsync(MuxServerCall call) => _handler(_implementation, call);
}

/// <summary>A method served through a <see cref="MuxServiceActivator{TService}"/> (for example a DI scope per call).</summary>
internal sealed class ActivatedServiceMethod<TService>(
    string serviceName, MuxMethodDefinition<TService> method, MuxServiceActivator<TService> activator)
    : ServiceMethod(serviceName, method.Id, method.Name)
    where TService : class
{
    private readonly MuxMethodHandler<TService> _handler = method.Handler;
    private readonly MuxServiceActivator<TService> _activator = activator;

    public override ValueTask InvokeAsync(MuxServerCall call) => _activator.InvokeAsync(call, _handler);
}
