namespace Mux.Internal;

/// <summary>A method bound to the implementation that serves it; the server's dispatch table holds these.</summary>
internal abstract class ServerMethod(uint id, string name)
{
    public uint Id { get; } = id;

    /// <summary>"Service.Method", for logs and collision messages.</summary>
    public string Name { get; } = name;

    public abstract ValueTask InvokeAsync(MuxServerCall call);
}

/// <summary>A method served by a single shared implementation instance.</summary>
internal sealed class SingletonServerMethod<TService>(string serviceName, MuxMethodDefinition<TService> method, TService implementation)
    : ServerMethod(method.Id, serviceName + "." + method.Name)
    where TService : class
{
    private readonly MuxMethodHandler<TService> _handler = method.Handler;
    private readonly TService _implementation = implementation;

    public override ValueTask InvokeAsync(MuxServerCall call) => _handler(_implementation, call);
}
