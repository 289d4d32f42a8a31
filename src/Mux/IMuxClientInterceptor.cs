namespace Mux;

/// <summary>
/// Runs around every call a <see cref="MuxClient"/> makes (through any of its proxies, also those
/// bound to <see cref="MuxCallOptions"/>), in the order the interceptors were added
/// (<see cref="MuxClientOptions.Interceptors"/>, or Mux.Hosting's <c>AddMuxClient(...).AddInterceptor&lt;T&gt;()</c>):
/// the first added is the outermost. Use one to add metadata (a correlation id, a tenant), to log or
/// time calls, or to change a call's <see cref="MuxClientCall.Timeout"/>.
/// </summary>
/// <remarks>
/// <para>
/// Changes to <see cref="MuxClientCall.Metadata"/> and <see cref="MuxClientCall.Timeout"/> made
/// before <c>next()</c> apply to the call; <c>next()</c> sends it and completes when it has
/// completed (for a method that returns an <see cref="IAsyncEnumerable{T}"/>, when its stream has
/// ended), throwing what the call failed with. Call it at most once, and await it. An exception an
/// interceptor throws (before or after <c>next()</c>) is what the caller gets; the call's result is
/// kept otherwise. An interceptor cannot replace a failure with a result: one that catches what
/// <c>next()</c> threw and returns without throwing fails the call with
/// <see cref="InvalidOperationException"/> (the failure inside), void calls and streams too, as a
/// server interceptor that swallows its handler's failure does. An interceptor that returns without
/// awaiting <c>next()</c> does not end the call early: the caller still waits for the call, and gets
/// its result, or the exception it failed with.
/// </para>
/// <para>
/// One instance serves every call, concurrently: keep it thread-safe. A client with no interceptor
/// pays nothing for this.
/// </para>
/// </remarks>
public interface IMuxClientInterceptor
{
    /// <summary>Runs around one call.</summary>
    /// <param name="call">The call about to be made: its method, metadata and timeout.</param>
    /// <param name="next">Makes the call (through the interceptors after this one).</param>
    /// <returns>A task that completes when the interceptor is done with the call.</returns>
    ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next);
}
