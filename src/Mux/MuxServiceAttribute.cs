namespace Mux;

/// <summary>
/// Marks an interface as a Mux service contract: Mux provides a client proxy and a server
/// dispatcher for it. Every method must return <see cref="Task"/>, <see cref="Task{TResult}"/>,
/// <see cref="ValueTask"/> or <see cref="ValueTask{TResult}"/>, and may take one
/// <see cref="CancellationToken"/>.
/// </summary>
[AttributeUsage(AttributeTargets.Interface, Inherited = false, AllowMultiple = false)]
public sealed class MuxServiceAttribute : Attribute
{
}
