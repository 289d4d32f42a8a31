using System.Runtime.CompilerServices;

namespace Mux.Connection;

/// <summary>
/// When a call must end, fixed once, when the user makes the call (<see cref="Fix"/>): waiting
/// for a connection, for a call slot or for room to send, and a resend after a failure the server
/// provably never ran, all spend from it, and the Request carries what is left of it when it is
/// written. A <see cref="ClockDeadline"/> timestamp of the client's
/// <see cref="MuxConnectionOptions.TimeProvider"/>, plus where it came from for the timeout's message.
/// </summary>
internal readonly struct CallDeadline
{
    /// <summary>No deadline (no CallTimeout and nothing inherited; streaming calls).</summary>
    public static CallDeadline None => new(ClockDeadline.Never, null);

    private CallDeadline(long at, string? inheritedFrom, TimeSpan? ownTimeout = null)
    {
        At = at;
        InheritedFrom = inheritedFrom;
        OwnTimeout = ownTimeout;
    }

    /// <summary>The client's clock timestamp at which the call times out;
    /// <see cref="ClockDeadline.Never"/> for never.</summary>
    public long At { get; }

    /// <summary>The served call's method when <see cref="At"/> is the deadline inherited from it
    /// (<see cref="MuxCallContext.Current"/>) rather than CallTimeout's; null otherwise.</summary>
    public string? InheritedFrom { get; }

    /// <summary>The call's own timeout (MuxCallOptions.Timeout, MuxClientCall.Timeout) when it replaced
    /// the side's own (CallTimeout, ClientCallTimeout), for the timeout's message; null otherwise.</summary>
    public TimeSpan? OwnTimeout { get; }

    public bool IsSet => At != ClockDeadline.Never;

    /// <summary>Reads <paramref name="clock"/> again (after a wait) for a call that has a deadline
    /// to measure against; 0, unread, for one that has none.</summary>
    public long Now(TimeProvider clock) => IsSet ? clock.GetTimestamp() : 0;

    /// <summary>
    /// The deadline of a call made now: <paramref name="timeout"/> (CallTimeout in
    /// <paramref name="clock"/>'s timestamp units, or <see cref="ClockDeadline.Never"/>) from now, or
    /// the deadline of the call the current server handler serves (only when a server propagates
    /// call contexts), whichever comes first. Reads the clock once, and not at all when there is no
    /// deadline to fix; <paramref name="now"/> is that reading (0 when none was made), which the
    /// caller passes on so that the Request sent at once does not read the clock again.
    /// <paramref name="ownTimeout"/> is the call's own timeout when <paramref name="timeout"/> is it
    /// (see <see cref="OwnTimeout"/>), else null.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static CallDeadline Fix(TimeProvider clock, long timeout, TimeSpan? ownTimeout, out long now)
    {
        if (!MuxCallContext.IsPropagating)
        {
            return Within(clock, timeout, ownTimeout, out now);
        }

        now = clock.GetTimestamp();
        return Inherit(clock, ClockDeadline.After(now, timeout), ownTimeout, now);
    }

    /// <summary>
    /// The deadline of a call made at <paramref name="madeAt"/> (an earlier reading of
    /// <paramref name="clock"/>), fixed once its client interceptors have run and may have changed
    /// its timeout: <paramref name="timeout"/> from when the user made the call, not from now, so the
    /// interceptors' own time spends from it too; or the inherited deadline, as in <see cref="Fix"/>.
    /// </summary>
    public static CallDeadline FixAt(TimeProvider clock, long timeout, TimeSpan? ownTimeout, long madeAt)
    {
        long own = ClockDeadline.After(madeAt, timeout);
        return MuxCallContext.IsPropagating ? Inherit(clock, own, ownTimeout, madeAt) : new CallDeadline(own, null, ownTimeout);
    }

    /// <summary>The deadline of a call made now that inherits none: <paramref name="timeout"/>
    /// from now. Reads the clock only when there is a timeout (<paramref name="now"/> is 0 otherwise).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static CallDeadline Within(TimeProvider clock, long timeout, TimeSpan? ownTimeout, out long now)
    {
        if (timeout == ClockDeadline.Never)
        {
            now = 0;
            return new CallDeadline(ClockDeadline.Never, null, ownTimeout);
        }

        now = clock.GetTimestamp();
        return new CallDeadline(ClockDeadline.After(now, timeout), null, ownTimeout);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static CallDeadline Inherit(TimeProvider clock, long own, TimeSpan? ownTimeout, long now)
    {
        long inherited = MuxCallContext.InheritableDeadline(clock, now, out MuxCallContext? from);
        return inherited < own ? new CallDeadline(inherited, from!.MethodName, ownTimeout) : new CallDeadline(own, null, ownTimeout);
    }
}
