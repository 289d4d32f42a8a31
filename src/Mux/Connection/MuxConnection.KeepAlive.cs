using System.Buffers.Binary;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Connection;

// Dead-peer detection, on either end, with one timer per connection and no work per frame: the
// reader loop stamps the time of each socket read (not each frame); the timer, re-armed for the
// next moment anything can be due, sends a Ping once nothing has arrived for KeepAliveInterval
// and closes the connection when nothing (Pong or any other byte) follows within
// KeepAliveTimeout. While the reader loop waits for outbound room (a peer that does not read what
// we send), room the peer makes counts as a read. A subclass adds its own deadlines to the same timer (the server's handshake
// timeout and idle close).
internal abstract partial class MuxConnection
{
    /// <summary>Drives the keepalive and idle timers (tests pass a fake one). Set by a subclass's
    /// constructor; immutable after.</summary>
    protected internal TimeProvider TimeProvider { get; init; } = TimeProvider.System;

    /// <summary>How long nothing may arrive before a Ping is sent; infinite turns keepalive off.
    /// Set by a subclass's constructor.</summary>
    protected TimeSpan KeepAliveInterval { get; init; } = Timeout.InfiniteTimeSpan;

    /// <summary>How long after a Ping something must arrive. Set by a subclass's constructor.</summary>
    protected TimeSpan KeepAliveTimeout { get; init; } = Timeout.InfiniteTimeSpan;

    // The one timer of this connection; null when neither keepalive nor a subclass deadline is on.
    // Created by StartTimer before the reader loop runs; re-armed only by its own callback (it is
    // one-shot, so callbacks never overlap); disposed by the close.
    private ITimer? _timer;

    // Whether keepalive is on (the timer checks _lastReadAt). Immutable after StartTimer.
    private bool _keepAliveOn;

    // TimeProvider timestamp of the latest socket read: the stamp the reader loop takes per read
    // anyway (its stage clock). Written by the reader loop once per read; read by the timer
    // callback and, through ArrivalTimestamp, by the reader loop itself.
    private long _lastReadAt;

    // TimeProvider timestamp at which the reader loop, stopped for outbound room, got it: the peer
    // read what we sent, proof of life as good as a read (while it waits, the loop reads nothing,
    // and after it, it may go on parsing the same read's bytes). Written by the reader loop; read
    // by the timer callback.
    private long _roomAt;

    // TimeProvider timestamp at which the unanswered Ping was sent; 0 when none is outstanding.
    // Only the timer callback writes it; IsAwaitingPong reads it.
    private long _pingSentAt;

    /// <summary>Whether a keepalive Ping was sent and nothing has arrived since (for tests and
    /// diagnostics).</summary>
    internal bool IsAwaitingPong
    {
        get
        {
            long pingSentAt = Volatile.Read(ref _pingSentAt);
            return pingSentAt != 0 && LastSignOfLife < pingSentAt;
        }
    }

    /// <summary>When the bytes the reader loop is parsing arrived, as a <see cref="TimeProvider"/>
    /// timestamp: the stamp of the socket read that brought them, so a request costs no clock read
    /// of its own. Reader loop only (a Request's deadline and its duration are measured from it).</summary>
    internal long ArrivalTimestamp => _lastReadAt;

    /// <summary>Called by the reader loop after each socket read, with the read's stamp: the peer
    /// is alive, and the bytes arrived then.</summary>
    private void NoteRead(long readAt) => Volatile.Write(ref _lastReadAt, readAt);

    /// <summary>Called by the reader loop when it got the outbound room it waited for.</summary>
    private void NoteRoom() => Volatile.Write(ref _roomAt, TimeProvider.GetTimestamp());

    /// <summary>The latest moment the peer was seen alive: a read, or room it made by reading.</summary>
    private long LastSignOfLife => Math.Max(Volatile.Read(ref _lastReadAt), Volatile.Read(ref _roomAt));

    /// <summary>Starts the connection's timer if keepalive or a subclass deadline needs it.
    /// Called once, by StartLoops, before the reader loop starts.</summary>
    private void StartTimer()
    {
        long now = TimeProvider.GetTimestamp();
        _lastReadAt = now;
        _keepAliveOn = KeepAliveInterval != Timeout.InfiniteTimeSpan;
        TimeSpan due = Earlier(_keepAliveOn ? KeepAliveInterval : Timeout.InfiniteTimeSpan, CheckDeadlines(now));
        if (due == Timeout.InfiniteTimeSpan || IsClosed)
        {
            // Nothing is due, or a deadline already past has closed the connection: that close found
            // no timer to dispose, and one armed now would keep the closed connection until it fired.
            return;
        }

        // The callback is the connection's own business: it must not carry the caller's context.
        // Armed only once the field is set, so that the first callback can re-arm it.
        using (ExecutionContext.SuppressFlow())
        {
            _timer = TimeProvider.CreateTimer(static state => ((MuxConnection)state!).OnTimer(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }

        _timer.Change(due, Timeout.InfiniteTimeSpan);
    }

    /// <summary>A subclass's own deadlines, checked on the connection's timer: returns how long
    /// until it wants to be asked again (infinite: never). May close the connection.</summary>
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

    /// <summary>Sends a Ping after KeepAliveInterval of silence (once the handshake is done) and closes
    /// the connection when nothing answers it within KeepAliveTimeout. Returns the time until the
    /// next check.</summary>
    private TimeSpan CheckKeepAlive(long now)
    {
        if (!_keepAliveOn)
        {
            return Timeout.InfiniteTimeSpan;
        }

        // Ping belongs after the handshake (until then the peer takes nothing but its frames, and
        // refuses the connection for anything else), which has its own timeout: look again later.
        if (!IsHandshakeDone)
        {
            return KeepAliveInterval;
        }

        long lastRead = LastSignOfLife;
        if (_pingSentAt != 0)
        {
            // Anything read at or after the Ping's moment answers it (a fake clock may not have
            // moved between the two; a real one only moves forward).
            if (lastRead < _pingSentAt)
            {
                TimeSpan waited = TimeProvider.GetElapsedTime(_pingSentAt, now);
                if (waited >= KeepAliveTimeout)
                {
                    Close(MuxCloseReason.KeepAliveTimeout, new TimeoutException(IsWaitingForOutboundRoom
                        ? DescribeStalledPeer(TimeProvider.GetElapsedTime(lastRead, now))
                        : $"no answer to a keepalive Ping within {DurationText.Format(KeepAliveTimeout)} (KeepAliveTimeout), after {DurationText.Format(KeepAliveInterval)} in which nothing arrived (KeepAliveInterval)"));
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
        if (!TrySendRawFrame(FrameType.Ping, 0, payload))
        {
            return Timeout.InfiniteTimeSpan; // Closed meanwhile.
        }

        Volatile.Write(ref _pingSentAt, now == 0 ? 1 : now); // 0 means "none outstanding".
        return KeepAliveTimeout;
    }

    /// <summary>Why the keepalive closes a peer that stopped reading: the reader loop read nothing
    /// meanwhile (it waits for room), so "nothing arrived" would be wrong; a dead peer looks the
    /// same from here, and one that reads nothing for this long is closed as one.</summary>
    private string DescribeStalledPeer(TimeSpan stalled) =>
        $"the {PeerName} read nothing this {SideName} sent for {DurationText.Format(stalled)} (KeepAliveInterval + KeepAliveTimeout): {QueuedOutboundBytes} bytes wait for it ({OptionsName}.MaxOutboundBytesPerConnection is {MaxQueuedOutboundBytes}), and this {SideName} reads nothing from a {PeerName} that does not read, its Pong included";

    /// <summary>The sooner of two delays, infinite meaning never.</summary>
    protected static TimeSpan Earlier(TimeSpan a, TimeSpan b) =>
        a == Timeout.InfiniteTimeSpan ? b : b == Timeout.InfiniteTimeSpan ? a : (a < b ? a : b);
}
