using System.Buffers;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using Mux.Diagnostics;
using Mux.Protocol;
using Mux.Serialization;
using Mux.Streaming;
using Mux.Transport;

namespace Mux.Connection;

/// <summary>
/// The caller role of a connection: the calls this side makes to its peer, on either side (a
/// client's calls to its server, a server's calls to its client). It numbers them in this side's
/// id space, keeps each in its pending table (<see cref="CallTable{TCall}"/>) until it completes exactly once
/// (answer, remote error, deadline, the caller's token, GoAway, connection loss), honours the
/// peer's call cap (<see cref="CallSlots"/>) and the outbound limit, and tells the peer when a
/// caller gives up (Cancel).
/// </summary>
internal sealed partial class OutgoingCalls
{
    private readonly MuxConnection _connection;
    // Calls waiting for their answer, by id: added by callers, removed by whoever completes them
    // (the answer's worker, the expiry scan, a cancellation, GoAway, the close).
    private readonly CallTable<PendingCall> _pending = new(ExpectedCalls);

    // About how many calls a connection has in flight, which sizes the pending table (a larger
    // number only makes more calls share a slot and take the locked path).
    private const int ExpectedCalls = 1024;

    // Ids are handed out in blocks of this many to each core (_idBlocks), so that callers on
    // different cores do not all increment one counter.
    private const uint IdBlockSize = 64;

    // The id space of these calls, carried by every frame of them: ServerInitiated for a server's
    // calls to its client, none for a client's. Immutable.
    private readonly FrameFlags _idSpace;

    // The side's timeout for its calls (CallTimeout or ClientCallTimeout), for the expiry scan's
    // period and the timeout's message. Immutable.
    private readonly TimeSpan _timeout;

    // Scans the table for expired calls, on the connection's TimeProvider. Created by the first
    // call that has a deadline (CompareExchange); disposed by FailAll.
    private ITimer? _expiryTimer;

    // The scan's period in milliseconds: set when it starts, lowered (never raised) by a call whose
    // own timeout is shorter (ShortenExpiryScan, CompareExchange).
    private long _scanPeriodMs;

    // The last call id of the last block handed out (see NextCallId); advanced a block at a time.
    private int _lastCallId;

    // Each core's block of ids (see NextCallId): the next id (low 32 bits) and the end of the
    // block (high 32 bits, exclusive), packed in one long so that a compare-and-swap takes an id.
    // Written by callers on that core.
    private readonly CoreStripe[] _idBlocks = new CoreStripe[StripedCounter.StripeCount];

    // Set (once) when the peer sent GoAway: new calls fail at once. Written by the reader loop.
    private volatile bool _goingAway;

    // The peer's maxConcurrentCalls, honoured here: a call holds a slot from before its Request is
    // sent until the peer's answer for it arrives. Replaced by the reader loop from the peer's
    // handshake, before any call; used by callers after.
    private volatile CallSlots _slots = new(int.MaxValue);

    // Calls the caller gave up on (cancelled or timed out) whose answer has not arrived yet: their
    // slots stay taken until it does, because the peer still counts them. Guarded by itself;
    // touched only on those rare paths. A call leaves the table for this set under its lock, so an
    // answer the reader cannot find in the table is found here (see TakeAnswered).
    private readonly HashSet<uint> _abandoned = [];

    // Whether the peer reads the trace-context header of Requests, and whether it takes streams on
    // these calls (a client of an older build does not, on its server's calls): its handshake said
    // so. Written once by the reader loop before any call; read by callers after.
    private volatile bool _peerReadsTraceContext;
    private volatile bool _peerTakesStreams = true;

    // Lets callers that wait for room in the outbound queue (MaxOutboundBytesPerConnection) queue
    // their requests one at a time. Taken only on that slow path; never by a call that finds room.
    private readonly SemaphoreSlim _roomGate = new(1, 1);

    public OutgoingCalls(MuxConnection connection, TimeSpan timeout)
    {
        _connection = connection;
        _timeout = timeout;
        _idSpace = connection.IsServer ? FrameFlags.ServerInitiated : FrameFlags.None;
    }

    public MuxConnection Connection => _connection;

    /// <summary>Calls waiting for their answer now (read without a lock; exact at quiet moments).</summary>
    public int Count => _pending.Count;

    /// <summary>Whether the peer sent GoAway: no new call is sent.</summary>
    public bool IsGoingAway => _goingAway;

    /// <summary>Call slots free now, and calls given up on whose answer has not come (for tests:
    /// at a quiet moment the first is the peer's cap and the second 0, or a slot leaked).</summary>
    internal (int FreeSlots, int Abandoned) SlotAccount
    {
        get
        {
            lock (_abandoned)
            {
                return (_slots.Free, _abandoned.Count);
            }
        }
    }

    /// <summary>The server's address and port for span tags; null in memory or on a server. Set
    /// once, before any call.</summary>
    public ServerPeer? Peer { get; set; }

    // The connection's clock: deadlines are its timestamps.
    private TimeProvider Clock => _connection.TimeProvider;

    /// <summary>Takes what the peer's handshake says about these calls: its cap, whether it reads
    /// trace context and whether it takes streams on them. Reader loop, before any call.</summary>
    public void OnPeerSettings(int maxConcurrentCalls, bool readsTraceContext, bool takesStreams)
    {
        _slots = new CallSlots(maxConcurrentCalls);
        _peerReadsTraceContext = readsTraceContext;
        _peerTakesStreams = takesStreams;
    }

    /// <summary>Throws unless the peer takes streams on these calls: a client of an older Mux does
    /// not on its server's calls, and would close the connection on their frames.</summary>
    public void RequireStreams()
    {
        if (!_peerTakesStreams)
        {
            throw new NotSupportedException($"The Mux {_connection.PeerName} at {_connection.Name} does not take IAsyncEnumerable streams on the calls its server starts (it did not announce serverCallStreams: an older Mux); call it with methods that take and return no stream.");
        }
    }

    /// <summary>Starts a call that must end by <paramref name="deadline"/>, fixed when the user made
    /// it (<see cref="CallDeadline.Fix"/>); <paramref name="now"/> is the caller's latest reading of
    /// the clock (0 for a call without a deadline), so that a call sent at once reads it no more.
    /// <paramref name="streams"/> are the call's streams when its method takes or returns an
    /// IAsyncEnumerable (Mux.Streaming); such a call has no deadline: it lasts as long as its
    /// streams do, and its token ends it. <paramref name="metadata"/> is the call's metadata section
    /// (MetadataSection.Encode), or null for none.</summary>
    public ValueTask<TResult> InvokeAsync<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams = null, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<TResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, streams, metadata, out ValueTask<TResult> otherwise);
        return call is not null ? new ValueTask<TResult>(call, call.Version) : otherwise;
    }

    /// <summary>Starts a call that returns no value; see
    /// <see cref="InvokeAsync{TArguments, TResult}(uint, in TArguments, in CallDeadline, long, CancellationToken, CallStreams?, byte[])"/>.
    /// The call sent at once is awaited through its own object, as one with a value is.</summary>
    public ValueTask InvokeAsync<TArguments>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, byte[]? metadata = null)
        where TArguments : struct
    {
        PendingCall<VoidResult>? call = Start(methodId, arguments, deadline, now, cancellationToken, null, metadata, out ValueTask<VoidResult> otherwise);
        // Otherwise: a Task already when it failed before it was sent; one Task more when it waits
        // for a slot or room (a rare path).
        return call is not null ? new ValueTask(call, call.Version) : new ValueTask(otherwise.AsTask());
    }

    /// <summary>Both InvokeAsync: the call, when it was sent at once; else null, and
    /// <paramref name="otherwise"/> is how it ends (cancelled or refused before anything was sent,
    /// or its wait for a slot and room).</summary>
    private PendingCall<TResult>? Start<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata, out ValueTask<TResult> otherwise)
        where TArguments : struct
    {
        if (cancellationToken.IsCancellationRequested)
        {
            otherwise = ValueTask.FromCanceled<TResult>(cancellationToken);
            return null;
        }

        if (metadata is not null)
        {
            metadata = MetadataForPeer(metadata, methodId, out Exception? refused);
            if (refused is not null)
            {
                otherwise = ValueTask.FromException<TResult>(refused);
                return null;
            }
        }

        if (_connection.IsOutboundFull || !_slots.TryTake())
        {
            otherwise = InvokeWhenASlotIsFreeAsync<TArguments, TResult>(methodId, arguments, deadline, cancellationToken, streams, metadata);
            return null;
        }

        PendingCall<TResult>? call = StartHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, now, cancellationToken, streams, metadata, out Exception? failure);
        otherwise = call is null ? ValueTask.FromException<TResult>(failure!) : default;
        return call;
    }

    /// <summary>
    /// The metadata section to send to the peer: <paramref name="metadata"/> itself; or null when the
    /// peer reads none (its handshake announced no maxMetadataSize: an earlier build, which would
    /// close the connection on the Metadata flag, and could not read the section anyway), or, with
    /// <paramref name="refused"/> set, when it is over the limit the peer announced (nothing is sent:
    /// the peer would refuse it).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private byte[]? MetadataForPeer(byte[] metadata, uint methodId, out Exception? refused)
    {
        refused = null;
        int limit = _connection.PeerMaxMetadataSize;
        if (limit == 0)
        {
            return null;
        }

        int size = MetadataSection.MapSize(metadata);
        if (size > limit)
        {
            string peerOptions = _connection.IsServer ? nameof(MuxClientOptions) : nameof(MuxServerOptions);
            refused = new InvalidOperationException($"The metadata of the call to {MuxServiceRegistry.GetMethodDisplayName(methodId)} is {size} bytes, over the {_connection.PeerName}'s MaxMetadataSize of {limit} bytes ({peerOptions}.MaxMetadataSize, announced in its handshake); the call was not sent. Send less metadata, or raise {peerOptions}.MaxMetadataSize.");
            return null;
        }

        return metadata;
    }

    /// <summary>Holding a slot: rents the call, starts its telemetry (a client's calls), and starts
    /// it. Null (with why) when it failed before anything was sent, its slot then given back.</summary>
    private PendingCall<TResult>? StartHoldingSlot<TArguments, TResult>(uint methodId, in TArguments arguments, in CallDeadline deadline, long now, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata, out Exception? failure)
        where TArguments : struct
    {
        PendingCall<TResult> call = PendingCall<TResult>.Rent(this, methodId, deadline);
        call.Streams = streams;
        call.SlotStripe = _slots.HomeStripe;

        // Only a client's calls are spans of their own: a server's call to its client runs inside
        // the handler's server span.
        ClientCallTelemetry telemetry = call.Telemetry = _connection.IsServer ? default : ClientCallTelemetry.Start(methodId, Peer, Clock, now);
        failure = StartCall(call, methodId, arguments, now, cancellationToken, metadata);
        if (failure is null)
        {
            return call;
        }

        _slots.Release(); // Nothing was sent: the peer will not answer it.
        telemetry.Stop(failure);
        return null;
    }

    /// <summary>The socket is behind (the peer is not reading) or the peer runs as many calls as it
    /// allows: wait (asynchronously, cancellably, within the call's deadline) for one of ours to be
    /// answered, then for room in the outbound queue, then send.</summary>
    private async ValueTask<TResult> InvokeWhenASlotIsFreeAsync<TArguments, TResult>(uint methodId, TArguments arguments, CallDeadline deadline, CancellationToken cancellationToken, CallStreams? streams, byte[]? metadata)
        where TArguments : struct
    {
        try
        {
            await _slots.WaitAsync(TimeLeft(deadline), Clock, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            throw CreateTimeoutException(methodId, deadline, $" (it waited for one of the {_connection.PeerName}'s MaxConcurrentCallsPerConnection slots all that time)");
        }

        bool gated = _connection.IsOutboundFull;
        if (gated)
        {
            await EnterRoomGateAsync(methodId, deadline, cancellationToken).ConfigureAwait(false);
        }

        PendingCall<TResult>? call;
        Exception? failure;
        try
        {
            call = StartHoldingSlot<TArguments, TResult>(methodId, arguments, deadline, deadline.Now(Clock), cancellationToken, streams, metadata, out failure);
        }
        finally
        {
            if (gated)
            {
                _roomGate.Release();
            }
        }

        return call is not null ? await new ValueTask<TResult>(call, call.Version).ConfigureAwait(false) : throw failure!;
    }

    /// <summary>
    /// Holding a slot, waits until the outbound queue is under MaxOutboundBytesPerConnection (the
    /// writer took it, which it does once the socket accepted the previous batch) or the connection
    /// closed (the send then fails as "not run"), then holds <see cref="_roomGate"/>: the caller
    /// releases it once its request is queued, so waiters go one at a time and the queue passes the
    /// limit by at most one request each time it drains, instead of by every waiter's at once. A
    /// caller that gives up queues nothing and gives its slot back.
    /// </summary>
    private async ValueTask EnterRoomGateAsync(uint methodId, CallDeadline deadline, CancellationToken cancellationToken)
    {
        // SemaphoreSlim takes no TimeProvider, so the deadline is a token on the connection's
        // clock, one for the whole wait. Rare path (the peer stopped reading): allocations are fine.
        using CancellationTokenSource? expiry = deadline.IsSet ? new CancellationTokenSource(TimeLeft(deadline), Clock) : null;
        using CancellationTokenSource? linked = expiry is not null && cancellationToken.CanBeCanceled
            ? CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, expiry.Token)
            : null;
        CancellationToken token = linked?.Token ?? expiry?.Token ?? cancellationToken;
        bool entered = false;
        try
        {
            await _roomGate.WaitAsync(token).ConfigureAwait(false);
            entered = true;
            while (_connection.IsOutboundFull && !_connection.IsClosed)
            {
                await _connection.WaitForOutboundRoomAsync().WaitAsync(token).ConfigureAwait(false);
            }
        }
        catch (Exception ex)
        {
            if (entered)
            {
                _roomGate.Release();
            }

            _slots.Release(); // Nothing was sent.
            if (ex is OperationCanceledException && expiry is not null)
            {
                // The deadline's token fired, or the caller's: each is reported as the caller knows it.
                throw cancellationToken.IsCancellationRequested
                    ? new OperationCanceledException(ex.Message, ex, cancellationToken)
                    : CreateTimeoutException(methodId, deadline, $" (it waited all that time to be sent: the connection already had {MuxConnection.DescribeSize(_connection.MaxQueuedOutboundBytes)} of requests queued for a {_connection.PeerName} that is not reading them, {_connection.OptionsName}.MaxOutboundBytesPerConnection)");
            }

            throw;
        }
    }

    /// <summary>How long a wait may last before the call's deadline: infinite without one, zero
    /// once it has passed (the wait then times out at once).</summary>
    private TimeSpan TimeLeft(in CallDeadline deadline)
    {
        ClockDeadline.TryGetRemaining(Clock, deadline.At, out TimeSpan left);
        return left;
    }

    /// <summary>The timeout a call with <paramref name="deadline"/> fails with, naming where the
    /// deadline came from (the served call it inherited it from, else the call's own timeout, else
    /// the side's); <paramref name="detail"/> says what it waited for.</summary>
    private TimeoutException CreateTimeoutException(uint methodId, in CallDeadline deadline, string detail)
    {
        string method = MuxServiceRegistry.GetMethodDisplayName(methodId);
        if (deadline.InheritedFrom is { } inheritedFrom)
        {
            return new($"The Mux call to {method} did not complete by the deadline it inherited from the call this server handler serves ({inheritedFrom}, MuxCallContext.Current), which came sooner than {(deadline.OwnTimeout is null ? "MuxClientOptions.CallTimeout" : "its own Timeout")}{detail}.");
        }

        string within = deadline.OwnTimeout is { } own
            ? $"{DurationText.Format(own)} (its own Timeout: MuxCallOptions.Timeout, or MuxClientCall.Timeout as an interceptor set it)"
            : $"{DurationText.Format(_timeout)} ({(_connection.IsServer ? "MuxServerOptions.ClientCallTimeout" : "MuxClientOptions.CallTimeout")})";
        return new($"The Mux call to {(_connection.IsServer ? "the client's " : "")}{method} did not complete within {within}{detail}.");
    }

    private TimeoutException CreateExpiredException(PendingCall call) =>
        CreateTimeoutException(call.MethodId, call.Deadline, "");

    /// <summary>
    /// Publishes the call, sends its request (its deadline header measured at <paramref name="now"/>)
    /// and hooks up cancellation. Returns an exception when the call failed before anything was
    /// sent (the call object is then back in its pool).
    /// </summary>
    private Exception? StartCall<TResult, TArguments>(PendingCall<TResult> call, uint methodId, in TArguments arguments, long now, CancellationToken cancellationToken, byte[]? metadata)
        where TArguments : struct
    {
        if (call.Deadline.At <= now)
        {
            // Its deadline passed while it waited (for a connection, a slot, room, or a resend):
            // the peer would only refuse it, so it is not sent, and no retry would help either.
            Exception expired = CreateTimeoutException(methodId, call.Deadline, " (its time ran out while it waited to be sent; it was not sent)");
            call.Return();
            return expired;
        }

        if (call.Deadline.IsSet)
        {
            if (_expiryTimer is null)
            {
                StartExpiryScan(call.Deadline.At, now, call.Deadline.OwnTimeout);
            }
            else if (call.Deadline.OwnTimeout is { } own)
            {
                ShortenExpiryScan(own);
            }
        }

        // Read before the Request goes out: from then on the call may complete and be reused.
        CallStreams? streams = call.Streams;
        while (true)
        {
            call.CallId = NextCallId();
            if (_pending.TryAdd(call, out bool closed))
            {
                break;
            }

            if (closed)
            {
                call.Return();
                return NotSent(_connection.CloseError);
            }

            // The id is still in use after wrapping around 2^32 calls: take the next one.
        }

        // After GoAway no call is sent. Checked after the add, not before it: TryAdd's swap and
        // OnGoAway's barrier are full fences, so either OnGoAway's scan sees this call or this sees
        // _goingAway. Seen here, the call is taken back unsent; if the scan took it first, the scan
        // is failing it.
        if (_goingAway)
        {
            if (!_pending.TryRemove(call.CallId, call))
            {
                return null;
            }

            call.Return();
            return GoingAwayNotSent();
        }

        if (streams is not null)
        {
            RegisterStreams(call.CallId, streams); // Before the Request: the peer may stream at once.
        }

        try
        {
            // A call that streams its arguments gets its send window only once its Request is out
            // whole, which for a Request in fragments is a few writer turns from now.
            SendRequest(call, methodId, arguments, now, streams?.Sender is null ? null : streams, metadata);
        }
        catch (Exception ex)
        {
            if (_pending.TryRemove(call.CallId, call))
            {
                call.Return();

                // SendFrame throws MuxConnectionException only before it queues anything.
                return ex is MuxConnectionException { IsSafeToRetry: false } closed ? NotSent(closed) : ex;
            }

            // A close removed the call first and is already failing it: let that outcome stand.
            return null;
        }

        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }

    /// <summary>Sends the call's Request: its arguments, after its metadata section when it has one
    /// (<paramref name="metadata"/>, checked against the peer's limit already).</summary>
    private void SendRequest<TArguments>(PendingCall call, uint methodId, in TArguments arguments, long now, IMessageWrittenListener? whenWritten, byte[]? metadata)
        where TArguments : struct
    {
        var body = new ArgumentsBody<TArguments>(arguments, _connection.SerializerOptions);
        if (metadata is null)
        {
            SendRequest(call, methodId, ref body, FrameFlags.None, now, whenWritten);
        }
        else
        {
            var withMetadata = new MetadataBody<ArgumentsBody<TArguments>>(body, metadata);
            SendRequest(call, methodId, ref withMetadata, FrameFlags.Metadata, now, whenWritten);
        }
    }

    /// <summary>Sends the call's Request with the optional headers it needs before
    /// <paramref name="body"/> (whose own flags are <paramref name="flags"/>): its deadline (when it
    /// has one: what is left of it at <paramref name="now"/>) and the caller's trace context (when
    /// the peer reads it). A server's calls to its client carry neither (docs/protocol.md, "Calls
    /// from server to client").</summary>
    private void SendRequest<TBody>(PendingCall call, uint methodId, ref TBody body, FrameFlags flags, long now, IMessageWrittenListener? whenWritten)
        where TBody : struct, IFrameBody
    {
        if (_idSpace != FrameFlags.None)
        {
            _connection.SendFrame(FrameType.Request, call.CallId, methodId, ref body, _idSpace | flags, whenWritten);
            return;
        }

        Activity? trace = _peerReadsTraceContext ? call.Telemetry.Activity ?? Activity.Current : null;
        if (trace is null || !TraceContextHeader.CanPropagate(trace))
        {
            SendRequestWithDeadline(call, methodId, ref body, flags, now, whenWritten);
            return;
        }

        var traced = new TracedBody<TBody>(body, trace);
        SendRequestWithDeadline(call, methodId, ref traced, flags | FrameFlags.TraceContext, now, whenWritten);
    }

    /// <summary>Sends the call's Request, <paramref name="body"/> after its deadline header when it
    /// has a deadline.</summary>
    private void SendRequestWithDeadline<TBody>(PendingCall call, uint methodId, ref TBody body, FrameFlags flags, long now, IMessageWrittenListener? whenWritten)
        where TBody : struct, IFrameBody
    {
        if (!call.Deadline.IsSet)
        {
            _connection.SendFrame(FrameType.Request, call.CallId, methodId, ref body, flags, whenWritten);
            return;
        }

        // now is the caller's latest reading: taken when the call was made when it is sent at once,
        // or after its last wait; so the peer's clock starts from what is really left.
        uint remaining = DeadlineHeader.RemainingMilliseconds(call.Deadline.At, now, Clock.TimestampFrequency);
        var timed = new DeadlineBody<TBody>(body, remaining);
        _connection.SendFrame(FrameType.Request, call.CallId, methodId, ref timed, flags | FrameFlags.Deadline, whenWritten);
    }

    /// <summary>
    /// The next call id: from this core's block, taking a new block of <see cref="IdBlockSize"/>
    /// from the connection's counter when it runs out. One compare-and-swap on a line of this core's
    /// per call, one shared increment per block. Ids reach the wire out of order across cores, as
    /// they always could across threads; nothing relies on their order (GoAway serves every id up
    /// to the one it carries, whenever it arrives). 0 is reserved for the connection.
    /// </summary>
    private uint NextCallId()
    {
        ref long block = ref _idBlocks[Thread.GetCurrentProcessorId() & (StripedCounter.StripeCount - 1)].Value;
        while (true)
        {
            long current = Volatile.Read(ref block);
            uint next = (uint)current;
            uint end = (uint)(current >> 32);
            long taken;
            if (next != end)
            {
                taken = current;
            }
            else
            {
                // The block is used up (or never taken): take a new one.
                next = (uint)Interlocked.Add(ref _lastCallId, (int)IdBlockSize) - IdBlockSize + 1;
                end = next + IdBlockSize;
                taken = current;
            }

            if (Interlocked.CompareExchange(ref block, ((long)end << 32) | (next + 1), taken) != taken)
            {
                continue; // Another thread on this core took an id (or a block) meanwhile: its block stands.
            }

            if (next != 0)
            {
                return next;
            }
        }
    }

    /// <summary>Starts the expiry scan, once per connection: first at the deadline of the call that
    /// needs it, then every tenth of the side's timeout (or, without one, of that first call's time
    /// left), which keeps deadlines within about 10% without waking often.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void StartExpiryScan(long deadline, long now, TimeSpan? ownTimeout)
    {
        TimeSpan first = deadline > now ? Clock.GetElapsedTime(now, deadline) : TimeSpan.Zero;
        TimeSpan span = ownTimeout ?? (_timeout != Timeout.InfiniteTimeSpan ? _timeout : first);
        long periodMs = ScanPeriodMilliseconds(span);
        Volatile.Write(ref _scanPeriodMs, periodMs);
        var period = TimeSpan.FromMilliseconds(periodMs);
        ITimer created;
        using (ExecutionContext.SuppressFlow())
        {
            created = Clock.CreateTimer(static state => ((OutgoingCalls)state!).FailExpiredCalls(), this, first, period);
        }

        if (Interlocked.CompareExchange(ref _expiryTimer, created, null) is not null || _connection.IsClosed)
        {
            // Another call started one first, or FailAll may already have disposed the field's.
            created.Dispose();
        }
    }

    private static long ScanPeriodMilliseconds(TimeSpan timeout) => Math.Clamp((long)timeout.TotalMilliseconds / 10, 10, 1000);

    /// <summary>A call whose own timeout (MuxCallOptions.Timeout) is shorter than the one the scan
    /// was started for: scan more often from now on, so its deadline is kept within about 10% too.
    /// The period only ever shrinks, so this happens at most a few times per connection.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ShortenExpiryScan(TimeSpan ownTimeout)
    {
        long period = ScanPeriodMilliseconds(ownTimeout);
        long current = Volatile.Read(ref _scanPeriodMs);
        while (period < current)
        {
            long seen = Interlocked.CompareExchange(ref _scanPeriodMs, period, current);
            if (seen == current)
            {
                Volatile.Read(ref _expiryTimer)?.Change(TimeSpan.FromMilliseconds(period), TimeSpan.FromMilliseconds(period));
                return;
            }

            current = seen;
        }
    }

    private void FailExpiredCalls()
    {
        List<PendingCall>? expired = null;
        lock (_abandoned)
        {
            _pending.RemoveWhere(Clock.GetTimestamp(), static (call, now) => call.Deadline.At <= now, ref expired);
            if (expired is null)
            {
                return;
            }

            foreach (PendingCall call in expired)
            {
                _abandoned.Add(call.CallId);
            }
        }

        NotifyIfDrainedAfterGoAway();
        foreach (PendingCall call in expired)
        {
            GiveUp(call, CreateExpiredException(call));
        }
    }

    /// <summary>The caller's token fired: the call fails as cancelled, unless its answer (or
    /// anything else) completed it first.</summary>
    public void Cancel(PendingCall call, CancellationToken token)
    {
        bool removed;
        lock (_abandoned)
        {
            removed = _pending.TryRemove(call.CallId, call);
            if (removed)
            {
                _abandoned.Add(call.CallId);
            }
        }

        if (removed)
        {
            GiveUp(call, new OperationCanceledException("The Mux call was canceled by the caller.", token));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>Fails a call its caller gave up on (its token, its deadline), moved from the table
    /// to the abandoned set, and tells the peer (best effort: the connection may be gone). Its slot
    /// stays taken until the peer answers: the handler still runs there until it sees the Cancel.</summary>
    private void GiveUp(PendingCall call, Exception failure)
    {
        // Closed: the peer cancels every handler of a closed connection anyway.
        _connection.TrySendRawFrame(FrameType.Cancel, call.CallId, ReadOnlySpan<byte>.Empty, _idSpace);
        call.CompleteWithException(failure);
    }

    /// <summary>Whether an answer with this id is worth reading: a call waits for it, or a call that
    /// gave up does (its answer frees its slot). Reader loop, for a message in fragments.</summary>
    public bool ExpectsAnswer(uint callId)
    {
        if (_pending.Find(callId) is not null)
        {
            return true;
        }

        lock (_abandoned)
        {
            return _abandoned.Contains(callId);
        }
    }

    /// <summary>The peer answered a call: takes it out of the table, or null when its caller gave up
    /// on it, and frees its slot either way. An answer to an id we never sent (or already counted)
    /// frees nothing.</summary>
    private PendingCall? TakeAnswered(uint callId)
    {
        PendingCall? call = _pending.TryRemove(callId);
        if (call is null)
        {
            lock (_abandoned)
            {
                if (!_abandoned.Remove(callId))
                {
                    return null;
                }
            }
        }

        // To the caller's stripe: its next take finds the slot there, and callers on other cores
        // never write that line (an abandoned call's goes to this core's: any stripe keeps the count).
        _slots.Release(call?.SlotStripe ?? _slots.HomeStripe);
        return call;
    }

    /// <summary>After GoAway, once the last call the peer promised to serve has completed, the
    /// connection is told (a client then closes it).</summary>
    private void NotifyIfDrainedAfterGoAway()
    {
        if (_goingAway && _pending.Count == 0)
        {
            _connection.OnCallsDrainedAfterGoAway();
        }
    }

    /// <summary>A Response or Error to one of these calls. Reader loop only.</summary>
    public void OnAnswer(in Frame frame)
    {
        CallOutcome outcome = frame.Type == FrameType.Response ? CallOutcome.Response : CallOutcome.Error;
        PendingCall? call = TakeAnswered(frame.CallId);
        if (call is not null)
        {
            if (outcome == CallOutcome.Error && call.Deadline.IsSet && IsDeadlineExceeded(frame.Payload))
            {
                // The peer saw this call's deadline pass (before our own expiry scan, which runs
                // every tenth of the timeout, did): the caller gets the same timeout either way.
                call.CompleteWithException(CreateExpiredException(call));
            }
            else
            {
                call.CompleteWithPayload(outcome, frame.Payload, _connection);
            }
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>Whether an Error body (MessagePack <c>[code, message, type]</c>) carries
    /// <see cref="MuxStatusCode.DeadlineExceeded"/>: its first two bytes are 0x93 and the code's fixint.</summary>
    private static bool IsDeadlineExceeded(in ReadOnlySequence<byte> payload)
    {
        ReadOnlySpan<byte> start = payload.FirstSpan;
        return start.Length >= 2 && start[0] == 0x93 && start[1] == (byte)MuxStatusCode.DeadlineExceeded;
    }

    /// <summary>An answer over this side's MaxMessageSize, from a peer that ignored the limit this
    /// side announced: its call fails now (its remaining fragments are skipped); the connection
    /// stays up. Reader loop only.</summary>
    public void OnAnswerTooLarge(in Frame first)
    {
        PendingCall? call = TakeAnswered(first.CallId);
        if (call is not null)
        {
            string options = _connection.OptionsName;
            string side = _connection.IsServer ? "server" : "client";
            call.CompleteWithException(new MuxRemoteException(
                MuxStatusCode.MessageTooLarge,
                $"The {_connection.PeerName}'s {(first.Type == FrameType.Response ? "response" : "error")} to {MuxServiceRegistry.GetMethodDisplayName(call.MethodId)} is {first.MessageSize} bytes, over this {side}'s MaxMessageSize of {_connection.MaxMessageSize} bytes ({MuxConnection.DescribeSize(_connection.MaxMessageSize)}, {options}.MaxMessageSize); it was skipped. Raise {options}.MaxMessageSize, or ask the {_connection.PeerName} for less.",
                null));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>The peer sent GoAway: it serves the calls up to <paramref name="lastServedCallId"/>
    /// and none above, which fail as never run (safe to retry); no new call is sent. Reader loop.</summary>
    public void OnGoAway(uint lastServedCallId)
    {
        _goingAway = true;
        Interlocked.MemoryBarrier(); // Pairs with StartCall's check after its table add: see there.
        _slots.Fail(GoingAwayNotSent());
        List<PendingCall>? notServed = null;
        _pending.RemoveWhere(lastServedCallId, static (call, last) => call.CallId > last, ref notServed);
        foreach (PendingCall call in notServed ?? [])
        {
            call.CompleteWithException(MuxConnectionException.NotRun($"The Mux {_connection.PeerName} at {_connection.Name} is shutting down and did not run this call; it is safe to retry.", MuxCloseReason.GoAway, null));
        }

        NotifyIfDrainedAfterGoAway();
    }

    /// <summary>The failure of a call that was not sent because the connection closed with <paramref name="error"/>.</summary>
    private static MuxConnectionException NotSent(MuxConnectionException error) =>
        MuxConnectionException.NotRun($"The call was not sent: {error.Message}", error.Reason, error.InnerException);

    private MuxConnectionException GoingAwayNotSent() =>
        MuxConnectionException.NotRun($"The Mux {_connection.PeerName} at {_connection.Name} is shutting down (it sent GoAway); the call was not sent.", MuxCloseReason.GoAway, null);

    /// <summary>The connection closed: every call still waiting fails with <paramref name="error"/>;
    /// calls still waiting for a slot were never sent, so they fail as safe to send again elsewhere.</summary>
    public void FailAll(MuxConnectionException error)
    {
        Volatile.Read(ref _expiryTimer)?.Dispose();
        _slots.Fail(NotSent(error));
        var calls = new List<PendingCall>();
        _pending.Close(calls);
        foreach (PendingCall call in calls)
        {
            call.CompleteWithException(error);
        }
    }
}
