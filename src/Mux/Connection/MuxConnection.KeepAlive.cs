using System.Buffers.Binary;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Connection;

// One timer per connection and no work per frame: the reader loop stamps each socket read, and the timer, re-armed for
// the next moment anything can be due, pings and closes. While the reader loop waits for outbound room, room the peer
// makes counts as a read. A subclass adds its own deadlines to the same timer.
internal abstract partial class MuxConnection
{
    // Null when neither keepalive nor a subclass deadline is on. One-shot and re-armed only by its own callback, so callbacks
    // never overlap; disposed by the close.
    private ITimer? _timer;

    // Immutable after StartTimer.
    private bool _keepAliveOn;

    // Timestamp at which the unanswered Ping was sent; 0 when none is outstanding. Only the timer callback writes it.
    private long _pingSentAt;

    // How long nothing may arrive before a Ping is sent (infinite: never), and how long after it something must.
    private TimeSpan KeepAliveInterval => Settings.KeepAliveInterval;

    private TimeSpan KeepAliveTimeout => Settings.KeepAliveTimeout;

    /// <summary>For tests and diagnostics.</summary>
    internal bool IsAwaitingPong
    {
        get
        {
            long pingSentAt = Volatile.Read(ref _pingSentAt);
            return pingSentAt != 0 && Inbound.LastSignOfLife < pingSentAt;
        }
    }

    /// <summary>Once, before the reader loop.</summary>
    private void StartTimer()
    {
        long now = TimeProvider.GetTimestamp();
        Inbound.NoteRead(now);
        _keepAliveOn = KeepAliveInterval != Timeout.InfiniteTimeSpan;
        TimeSpan due = Earlier(_keepAliveOn ? KeepAliveInterval : Timeout.InfiniteTimeSpan, CheckDeadlines(now));
        if (due == Timeout.InfiniteTimeSpan || IsClosed)
        {
            // Nothing is due, or a deadline already past has closed the connection: that close found no timer to dispose,
            // and one armed now would keep the closed connection until it fired.
            return;
        }

        // The callback is the connection's own business: it must not carry the caller's context. Armed only once the field
        // is set, so that the first callback can re-arm it.
        using (ExecutionContext.SuppressFlow())
        {
            _timer = TimeProvider.CreateTimer(
                static state => ((MuxConnection)state!).OnTimer(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }

        _timer.Change(due, Timeout.InfiniteTimeSpan);
    }

    /// <summary>Returns how long until it wants to be asked again (infinite: never). May close the connection.</summary>
    protected virtual TimeSpan CheckDeadlines(long now) => Timeout.InfiniteTimeSpan;

    private void OnTimer()
    {
        if (IsClosed)
        {
            return;
        }

        long now = TimeProvider.GetTimestamp();
        TimeSpan due = Earlier(CheckKeepAlive(now), CheckDeadlines(now));
        if (IsClosed || due == Timeout.InfiniteTimeSpan)
        {
            return;
        }

        try
        {
            _timer?.Change(due, Timeout.InfiniteTimeSpan);
        }
        catch (ObjectDisposedException)
        {
            // Closed meanwhile.
        }
    }

    /// <summary>Returns the time until the next check.</summary>

    private TimeSpan CheckKeepAlive(long now)
    {
        if (!_keepAliveOn)
        {
            return Timeout.InfiniteTimeSpan;
        }

        // Until the handshake, which has its own timeout, the peer refuses any other frame.
        if (!IsHandshakeDone)
        {
            return KeepAliveInterval;
        }

        long lastRead = Inbound.LastSignOfLife;
        if (_pingSentAt != 0)
        {
            // Anything read at or after the Ping's moment answers it: a fake clock may not have moved between the two.
            if (lastRead < _pingSentAt)
            {
                TimeSpan waited = TimeProvider.GetElapsedTime(_pingSentAt, now);
                if (waited >= KeepAliveTimeout)
                {
                    Close(MuxCloseReason.KeepAliveTimeout, new TimeoutException(Inbound.IsWaitingForRoom
                        ? DescribeStalledPeer(TimeProvider.GetElapsedTime(lastRead, now))
                        : $"no answer to a keepalive Ping within {DurationText.Format(KeepAliveTimeout)} (KeepAliveTimeout), " +
                          $"after {DurationText.Format(KeepAliveInterval)} in which nothing arrived (KeepAliveInterval)"));
                    return Timeout.InfiniteTimeSpan;
                }

                return KeepAliveTimeout - waited;
            }

            Volatile.Write(ref _pingSentAt, 0);
        }

        TimeSpan silent = TimeProvider.GetElapsedTime(lastRead, now);
        if (silent < KeepAliveInterval)
        {
            return KeepAliveInterval - silent;
        }

        // A Ping's 8 bytes are opaque to the peer, which echoes them in its Pong: the send time.
        Span<byte> payload = stackalloc byte[ProtocolConstants.PingPayloadSize];
        BinaryPrimitives.WriteInt64LittleEndian(payload, now);
        if (!Outbound.TrySendRawFrame(FrameType.Ping, 0, payload))
        {
            return Timeout.InfiniteTimeSpan; // Closed meanwhile.
        }

        Volatile.Write(ref _pingSentAt, now == 0 ? 1 : now); // 0 means "none outstanding".
        return KeepAliveTimeout;
    }

    /// <summary>Why the keepalive closes a peer that stopped reading: the reader loop read nothing meanwhile (it waits for
    /// room), so "nothing arrived" would be wrong; a dead peer looks the same from here, and is closed as one.</summary>
    private string DescribeStalledPeer(TimeSpan stalled) =>
        $"the {PeerName} read nothing this {SideName} sent for {DurationText.Format(stalled)} (KeepAliveInterval + KeepAliveTimeout): " +
        $"{Outbound.QueuedBytes} bytes wait for it ({OptionsName}.MaxOutboundBytesPerConnection is {Settings.MaxOutboundBytes}), " +
        $"and this {SideName} reads nothing from a {PeerName} that does not read, its Pong included";

    /// <summary>The sooner of two delays, infinite meaning never.</summary>
    protected static TimeSpan Earlier(TimeSpan a, TimeSpan b) =>
        a == Timeout.InfiniteTimeSpan ? b : b == Timeout.InfiniteTimeSpan ? a : (a < b ? a : b);
}
