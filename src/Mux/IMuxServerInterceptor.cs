namespace Mux;

/// <summary>
/// Runs around every call a <see cref="MuxServer"/> serves, in the order the interceptors were added
/// (<see cref="MuxServerOptions.Interceptors"/>, or Mux.Hosting's <c>AddMuxServer(...).AddInterceptor&lt;T&gt;()</c>):
/// the first added is the outermost. Use one to log or time calls, check who is calling
/// (<see cref="MuxCallContext.User"/>, <see cref="MuxCallContext.Metadata"/>), or refuse a call.
/// </summary>
/// <remarks>
/// <para>
/// <c>next()</c> runs the next interceptor, or the handler after the last one; it completes when the
/// handler has completed (for a streaming method, when its whole stream has been sent or read) and
/// throws what the handler threw. Call it at most once, and await it. The answer is sent only once every
/// interceptor has returned, so an interceptor that throws after <c>next()</c> still decides how
/// the call ends. An interceptor that returns without awaiting <c>next()</c> does not end the call
/// early: the call still waits for its handler, and sends the handler's answer, or the failure it
/// threw (caught only by an interceptor that took it from the task of <c>next()</c>).
/// </para>
/// <para>
/// To refuse a call, throw before <c>next()</c>: the handler does not run, and the caller gets
/// <see cref="MuxRemoteException"/> with the status and message of the
/// <see cref="MuxRemoteException"/> thrown (for example <see cref="MuxStatusCode.PermissionDenied"/>),
/// or <see cref="MuxStatusCode.HandlerFailed"/> for any other exception, with its message only when
/// <see cref="MuxServerOptions.EnableDetailedErrors"/> is on (the server's log has it either way).
/// An interceptor that throws fails only its own call. Returning without calling <c>next()</c> and
/// without throwing fails the call with <see cref="MuxStatusCode.HandlerFailed"/>: there is no result
/// to send.
/// </para>
/// <para>
/// One instance serves every call, concurrently: keep it thread-safe. It runs on the thread pool,
/// never on the connection's reader loop. A server with no interceptor pays nothing for this.
/// </para>
/// </remarks>
public interface IMuxServerInterceptor
{
    /// <summary>Runs around one call.</summary>
    /// <param name="call">The call being served: its method, metadata, user, connection, token and deadline.
    /// Valid until the call completes.</param>
    /// <param name="next">Runs the rest of the pipeline (the next interceptor, or the handler).</param>
    /// <returns>A task that completes when the interceptor is done with the call.</returns>
    ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next);
}
