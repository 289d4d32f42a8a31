using System.Runtime.CompilerServices;

namespace Mux.Connection;

/// <summary>
/// When a call must end, fixed once when the user makes it (<see cref="Fix"/>): every wait and any resend spend from it, and the Request
/// carries what is left. A timestamp of the side's clock, plus where it came from for the timeout's message.
/// </summary>
/// <param name="At">The timestamp at which the call times out; <see cref="ClockDeadline.Never"/> for never.</param>
/// <param name="InheritedFrom">The served call's method when <paramref name="At"/> is the deadline inherited from it; null otherwise.</param>
/// <param name="OwnTimeout">The call's own timeout when it replaced the side's, for the timeout's message; null otherwise.</param>
internal readonly record struct CallDeadline(long At, string? InheritedFrom, TimeSpan? OwnTimeout = null)
{
    /// <summary>No deadline: streaming calls.</summary>
    public static CallDeadline None => new(ClockDeadline.Never, null);

    public bool IsSet => At != ClockDeadline.Never;

    /// <summary>Reads the clock again after a wait, for a call that has a deadline; 0, unread, for one that has none.</summary>
    public long Now(TimeProvider clock) => IsSet ? clock.GetTimestamp() : 0;

    /// <summary>
    /// The deadline of a call made at <paramref name="madeAt"/> (0 for now): <paramref name="timeout"/> after it, in
    /// <paramref name="clock"/>'s units, or, when the call <paramref name="inherits"/> and a server propagates call contexts, the served
    /// call's deadline if that comes first. <paramref name="now"/> is the reading the deadline counts from, 0 when none was needed, so a
    /// Request sent at once reads the clock no more. <paramref name="ownTimeout"/> is the call's own timeout when
    /// <paramref name="timeout"/> is it, for the timeout's message.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static CallDeadline Fix(TimeProvider clock, long timeout, TimeSpan? ownTimeout, bool inherits, long madeAt, out long now)
    {
        inherits = inherits && MuxCallContext.IsPropagating;
        if (timeout == ClockDeadline.Never && !inherits)
        {
            now = madeAt;
            return new CallDeadline(ClockDeadline.Never, null, ownTimeout);
        }

        now = madeAt != 0 ? madeAt : clock.GetTimestamp();
        long own = ClockDeadline.After(now, timeout);
        return inherits ? Inherit(clock, own, ownTimeout, now) : new CallDeadline(own, null, ownTimeout);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static CallDeadline Inherit(TimeProvider clock, long own, TimeSpan? ownTimeout, long now)
    {
        long inherited = MuxCallContext.InheritableDeadline(clock, now, out MuxCallContext? from);
        return inherited < own ? new CallDeadline(inherited, from!.MethodName, ownTimeout) : new CallDeadline(own, null, ownTimeout);
    }
}
