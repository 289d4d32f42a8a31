using System.Security.Claims;
using Mux.Connection;
using Mux.Server;

namespace Mux;

/// <summary>
/// The Mux call a server handler or interceptor is serving: its method, cancellation token, deadline, metadata, and who
/// is calling. A <see cref="MuxServiceAttribute">[MuxService]</see> method gets it by declaring a parameter of this
/// type, which the generated dispatcher fills (like a <see cref="System.Threading.CancellationToken"/>, it is not sent
/// and not part of the method id); other code reads <see cref="MuxServerCall.Context"/>.
/// </summary>
/// <remarks>
/// <para>One object per call, created only when a handler asks for it, so handlers that never do
/// pay nothing. It describes its call until the handler's task completes; read after that (for
/// instance by work the handler left running), <see cref="CancellationToken"/> is cancelled and
/// <see cref="IsCallRunning"/> is false. A token taken while the call ran stays its call's: it
/// never fires for a later call.</para>
/// <para>On the client side the parameter is ignored: a generated proxy sends nothing for it, so
/// callers pass <see langword="null"/> (or their own handler's context, which changes nothing).</para>
/// </remarks>
public sealed class MuxCallContext
{
    // Set by MuxServerCall around the handler's invocation (its awaits carry it on), read by a client call as it starts.
    private static readonly AsyncLocal<MuxCallContext?> s_current = new();

    // Whether any server in this process propagates call contexts; until one does, a client call
    // does not even look at s_current. Set once, never cleared.
    private static volatile bool s_propagating;

    // The pooled call this context describes while its generation is the call's current one.
    private readonly IncomingCall _call;

    // IncomingCall.Generation when this context was made; the call object is reused afterwards.
    private readonly uint _generation;

    internal MuxCallContext(IncomingCall call)
    {
        _call = call;
        _generation = call.Generation;
        MethodName = call.MethodName;
        DeadlineTimestamp = call.DeadlineTimestamp;
        Metadata = call.Metadata;
    }

    /// <summary>
    /// The call whose handler is running on this flow, or <see langword="null"/>: outside a handler, without
    /// <see cref="MuxServerOptions.EnableCallContextPropagation"/>, or for a call with no deadline. A
    /// <see cref="MuxClient"/> call made while that call <see cref="IsCallRunning">is running</see> inherits its deadline
    /// when sooner than its own CallTimeout. Work that outlives the handler starts under
    /// <see cref="ExecutionContext.SuppressFlow"/>.
    /// </summary>
    public static MuxCallContext? Current => s_propagating ? s_current.Value : null;

    internal static bool IsPropagating => s_propagating;

    /// <summary>"IService.Method" of the call being served.</summary>
    public string MethodName { get; }

    /// <summary>
    /// The metadata the caller sent (<see cref="MuxCallOptions.Metadata"/> and what its interceptors added): keys compared
    /// case-insensitively, none reserved for Mux (<c>mux-</c>). Empty when it sent none. Kept after the call has finished.
    /// </summary>
    public IReadOnlyDictionary<string, string> Metadata { get; }

    /// <summary>
    /// The principal <see cref="MuxServerOptions.Authenticate"/> returned for the connection, or an anonymous one without
    /// Authenticate and in a client's handlers. The same object for every call of a connection.
    /// </summary>
    public ClaimsPrincipal User => _call.Connection.PeerUser;

    /// <summary>
    /// The caller's address, auth token and TLS certificate, and the <see cref="MuxConnectionInfo.Properties"/> the
    /// application keeps for it. The same object for every call of a connection.
    /// </summary>
    public MuxConnectionInfo Connection => _call.Connection.PeerInfo;

    /// <summary>
    /// Cancelled when the caller gives up (cancellation, timeout, or its <see cref="Deadline"/>), when the connection is
    /// lost, or when the server stops without waiting for the call. Read once the call has finished, it is already
    /// cancelled. A token read while the call runs fires only for this call, never for a later one.
    /// </summary>
    public CancellationToken CancellationToken
    {
        get
        {
            if (IsCallRunning)
            {
                try
                {
                    CancellationToken token = _call.CancellationToken;

                    // Checked again: had the call finished meanwhile, the pooled call may serve another request.
                    if (IsCallRunning)
                    {
                        return token;
                    }
                }
                catch (ObjectDisposedException)
                {
                    // IncomingCall.Finish disposes the source just before it ends the call.
                }
            }

            return new CancellationToken(canceled: true);
        }
    }

    /// <summary>
    /// When the caller gives up on the call, by the server's clock (<see cref="MuxConnectionOptions.TimeProvider"/>), or
    /// <see langword="null"/> when it sent no deadline. The caller sends its remaining time, so the two machines' clocks
    /// never need to agree. <see cref="CancellationToken"/> fires then.
    /// </summary>
    public DateTimeOffset? Deadline => DeadlineTimestamp == long.MaxValue ? null : Clock.GetUtcNow() + RemainingTimeCore(Clock);

    /// <summary>The time left until <see cref="Deadline"/> (<see cref="TimeSpan.Zero"/> once it has
    /// passed), or <see langword="null"/> when the caller sent no deadline.</summary>
    public TimeSpan? RemainingTime => DeadlineTimestamp == long.MaxValue ? null : RemainingTimeCore(Clock);

    /// <summary>Whether the call is still being served (its handler's task has not completed).</summary>
    public bool IsCallRunning => _call.Generation == _generation;

    /// <summary>
    /// The client that made this call, to call the services it added with
    /// <see cref="MuxClient.AddService{TService}(TService)"/> on the same connection
    /// (<see cref="MuxRemoteClient.CreateProxy{TService}()"/>). The object may be kept after the call
    /// has finished: it stays usable while the client's connection is open.
    /// </summary>
    /// <exception cref="InvalidOperationException">This context is of a call a server started,
    /// served by a client: a client cannot be called back from there.</exception>
    public MuxRemoteClient Client => _call.Connection is ServerConnection server
        ? server.RemoteClient
        : throw new InvalidOperationException(
            $"{MethodName} is a call from the server, served by this client; MuxCallContext.Client exists only in a " +
            "server's handlers. Make calls to the server through your MuxClient.");


    /// <summary>A proxy of a service the calling client serves; the same as
    /// <c>Client.CreateProxy&lt;TService&gt;()</c>.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface the client added
    /// with <see cref="MuxClient.AddService{TService}(TService)"/>.</typeparam>
    /// <returns>The proxy; its calls travel on the caller's connection.</returns>
    /// <exception cref="InvalidOperationException">See <see cref="Client"/>; or no proxy is
    /// registered for the interface.</exception>
    public TService GetClientProxy<TService>()
        where TService : class
        => Client.CreateProxy<TService>();

    /// <summary>A timestamp of the server's clock; <see cref="long.MaxValue"/> when the caller sent none.</summary>
    internal long DeadlineTimestamp { get; }

    private TimeProvider Clock => _call.TimeProvider;

    /// <summary>Called when a server that propagates call contexts is created.</summary>
    internal static void EnablePropagation() => s_propagating = true;

    internal static MuxCallContext? Enter(MuxCallContext context)
    {
        MuxCallContext? previous = s_current.Value;
        s_current.Value = context;
        return previous;
    }

    /// <summary>Undoes <see cref="Enter"/> once the handler's synchronous part has returned.</summary>
    internal static void Restore(MuxCallContext? previous) => s_current.Value = previous;

    /// <summary>
    /// A timestamp of the client's <paramref name="clock"/>, or <see cref="long.MaxValue"/> when there is nothing to
    /// inherit. A client on the server's own clock keeps the deadline exactly; another gets what is left of it now.
    /// </summary>

    internal static long InheritableDeadline(TimeProvider clock, long now, out MuxCallContext? from)
    {
        from = s_current.Value;
        if (from is null || from.DeadlineTimestamp == long.MaxValue || !from.IsCallRunning)
        {
            from = null;
            return long.MaxValue;
        }

        if (ReferenceEquals(clock, from.Clock))
        {
            return from.DeadlineTimestamp;
        }

        TimeSpan remaining = from.RemainingTimeCore(from.Clock);
        return ClockDeadline.After(now, ClockDeadline.ToTimestampSpan(clock, remaining));
    }

    private TimeSpan RemainingTimeCore(TimeProvider clock)
    {
        long now = clock.GetTimestamp();
        return now >= DeadlineTimestamp ? TimeSpan.Zero : clock.GetElapsedTime(now, DeadlineTimestamp);
    }
}
