using Mux.Client;
using Mux.Connection;
using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Server;

/// <summary>
/// Calls this server starts to its client (docs/protocol.md, "Calls from server to client"): their
/// frames carry ServerInitiated, so their ids are the server's own and never collide with the
/// client's. The waiting side is the client's: a <see cref="PendingCall"/> per call in a
/// <see cref="PendingCallTable"/>, completed exactly once by the answer, the caller's token, the
/// timeout (<see cref="MuxServerOptions.ClientCallTimeout"/>) or the connection's close.
/// </summary>
internal sealed partial class ServerConnection : IPendingCallHost
{
    // Calls to the client waiting for its answer. Added by handlers (any thread); removed by the
    // reader loop (answer), the timeout timer, a caller's token, or the close.
    private readonly PendingCallTable _clientCalls = new();

    // The last id handed to a call to the client; incremented atomically by callers.
    private uint _lastClientCallId;

    // Scans _clientCalls for expired calls, on the options' TimeProvider. Created by the first call
    // to the client (most connections never make one), set only through CompareExchange; disposed
    // on close.
    private ITimer? _clientCallTimer;

    // What handlers call the client through; created on first use, set only through CompareExchange.
    private MuxRemoteClient? _remoteClient;

    /// <summary>The client at the other end, for handlers to call back.</summary>
    internal MuxRemoteClient RemoteClient =>
        Volatile.Read(ref _remoteClient) ?? Interlocked.CompareExchange(ref _remoteClient, new MuxRemoteClient(this), null) ?? _remoteClient!;

    /// <summary>Calls the client (a method of a service it added with MuxClient.AddService).</summary>
    internal ValueTask<TResult> InvokeClientAsync<TArguments, TResult>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<TResult>(cancellationToken);
        }

        PendingCall<TResult> call = PendingCall<TResult>.Rent(this, 0, methodId, ClientCallDeadline());
        Exception? failure = StartClientCall(call, methodId, arguments, cancellationToken);
        return failure is null ? new ValueTask<TResult>(call, call.Version) : ValueTask.FromException<TResult>(failure);
    }

    /// <summary>Calls a method of the client that returns no value.</summary>
    internal ValueTask InvokeClientAsync<TArguments>(uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled(cancellationToken);
        }

        PendingCall<VoidResult> call = PendingCall<VoidResult>.Rent(this, 0, methodId, ClientCallDeadline());
        Exception? failure = StartClientCall(call, methodId, arguments, cancellationToken);
        return failure is null ? new ValueTask(call, call.Version) : ValueTask.FromException(failure);
    }

    private long ClientCallDeadline()
    {
        TimeSpan timeout = _options.ClientCallTimeout;
        if (timeout == Timeout.InfiniteTimeSpan)
        {
            return ClockDeadline.Never;
        }

        if (Volatile.Read(ref _clientCallTimer) is null)
        {
            StartClientCallTimer(timeout);
        }

        return ClockDeadline.After(TimeProvider, timeout);
    }

    private void StartClientCallTimer(TimeSpan timeout)
    {
        // A tenth of the timeout keeps deadlines within ~10% without waking often.
        var period = TimeSpan.FromMilliseconds(Math.Clamp((long)timeout.TotalMilliseconds / 10, 10, 1000));
        ITimer timer;
        using (ExecutionContext.SuppressFlow())
        {
            timer = TimeProvider.CreateTimer(static state => ((ServerConnection)state!).FailExpiredClientCalls(), this, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        }

        if (Interlocked.CompareExchange(ref _clientCallTimer, timer, null) is not null)
        {
            timer.Dispose(); // Another caller started one first.
            return;
        }

        timer.Change(period, period);
        if (IsClosed)
        {
            timer.Dispose(); // OnClosed may have run before the timer was published.
        }
    }

    /// <summary>Publishes the call, sends its Request (flag ServerInitiated) and hooks up
    /// cancellation. Returns an exception when the call failed before anything was sent (the call
    /// object is then back in its pool).</summary>
    private Exception? StartClientCall<TResult, TArguments>(PendingCall<TResult> call, uint methodId, in TArguments arguments, CancellationToken cancellationToken)
        where TArguments : struct
    {
        while (true)
        {
            call.SetCallId(NextClientCallId());
            if (_clientCalls.TryAdd(call, out bool closed))
            {
                break;
            }

            if (closed)
            {
                call.ReturnUnused();
                MuxConnectionException error = CreateClosedException();
                return MuxConnectionException.NotRun($"The call to the client was not sent: {error.Message}", error.Reason, error.InnerException);
            }

            // The id is still in use after wrapping around 2^32 calls: take the next one.
        }

        try
        {
            var body = new ArgumentsBody<TArguments>(arguments, SerializerOptions);
            SendFrame(FrameType.Request, call.CallId, methodId, ref body, FrameFlags.ServerInitiated);
        }
        catch (Exception ex)
        {
            if (_clientCalls.TryRemove(call.CallId, call))
            {
                call.ReturnUnused();
                return ex;
            }

            return null; // A close removed the call first and is already failing it.
        }

        if (cancellationToken.CanBeCanceled)
        {
            call.RegisterCancellation(cancellationToken);
        }

        return null;
    }

    private uint NextClientCallId()
    {
        uint id = Interlocked.Increment(ref _lastClientCallId);
        return id != 0 ? id : Interlocked.Increment(ref _lastClientCallId); // 0 is reserved for the connection.
    }

    /// <inheritdoc/>
    public bool TryRemovePending(uint callId, PendingCall call) => _clientCalls.TryRemove(callId, call);

    /// <inheritdoc/>
    public void SendCancelQuietly(uint callId)
    {
        Span<byte> none = [];
        try
        {
            SendRawFrame(FrameType.Cancel, callId, none, FrameFlags.ServerInitiated);
        }
        catch (MuxConnectionException)
        {
            // Closed: the client cancels every call its server started when the connection closes.
        }
    }

    private void FailExpiredClientCalls()
    {
        List<PendingCall>? expired = null;
        _clientCalls.RemoveExpired(TimeProvider.GetTimestamp(), ref expired);
        if (expired is null)
        {
            return;
        }

        foreach (PendingCall call in expired)
        {
            SendCancelQuietly(call.CallId);
            call.CompleteWithException(new TimeoutException($"The Mux call to the client's {MuxServiceRegistry.GetMethodDisplayName(call.MethodId)} did not complete within {DurationText.Format(_options.ClientCallTimeout)} (MuxServerOptions.ClientCallTimeout)."));
        }
    }

    /// <summary>A frame of a call this server started: the client's Response or Error to it. Any
    /// other frame with ServerInitiated, or an answer without it, breaks the protocol.</summary>
    private void OnClientCallFrame(in Frame frame)
    {
        RequireClientAnswer(frame);

        // An unknown id is a call that timed out or was cancelled first: its answer is dropped.
        PendingCall? call = _clientCalls.TryRemove(frame.CallId);
        call?.CompleteWithPayload(frame.Type == FrameType.Response ? CallOutcome.Response : CallOutcome.Error, frame.Payload, this);
    }

    /// <summary>A message in fragments from the client: its own calls' Requests are expected (its
    /// call cap bounds them); an answer only while the call it answers still waits, so that answers
    /// to calls that gave up, or made up by a broken client, are skipped rather than buffered.</summary>
    protected override bool ExpectsMessage(in Frame first)
    {
        if ((first.Flags & FrameFlags.ServerInitiated) == 0)
        {
            return true;
        }

        RequireClientAnswer(first);
        return _clientCalls.Contains(first.CallId);
    }

    /// <summary>The client's answer to a call this server started is over this server's
    /// MaxMessageSize (the client ignored the limit this server announced): that call fails now with
    /// MessageTooLarge, the rest of the answer is skipped as it arrives, the connection stays up.</summary>
    private void OnClientCallTooLarge(in Frame first)
    {
        RequireClientAnswer(first);
        PendingCall? call = _clientCalls.TryRemove(first.CallId);
        call?.CompleteWithException(new MuxRemoteException(
            MuxStatusCode.MessageTooLarge,
            $"The client's {(first.Type == FrameType.Response ? "response" : "error")} to {MuxServiceRegistry.GetMethodDisplayName(call.MethodId)} is {first.MessageSize} bytes, over this server's MaxMessageSize of {_options.MaxMessageSize} bytes ({DescribeSize(_options.MaxMessageSize)}, MuxServerOptions.MaxMessageSize); it was skipped. Raise MuxServerOptions.MaxMessageSize, or ask the client for less.",
            null));
    }

    /// <summary>Throws unless the frame is an answer (Response or Error) with ServerInitiated.</summary>
    private static void RequireClientAnswer(in Frame frame)
    {
        bool isAnswer = frame.Type is FrameType.Response or FrameType.Error;
        if (!isAnswer || (frame.Flags & FrameFlags.ServerInitiated) == 0)
        {
            throw new MuxProtocolException(isAnswer
                ? $"The client sent a {frame.Type} frame without ServerInitiated (0x08); a server answers nothing else."
                : $"The client sent a {frame.Type} frame with ServerInitiated (0x08); only a server starts such calls.");
        }
    }

    /// <summary>The connection closed: every call still waiting for the client fails with it.</summary>
    private void FailClientCalls(MuxConnectionException error)
    {
        Volatile.Read(ref _clientCallTimer)?.Dispose();
        var calls = new List<PendingCall>();
        _clientCalls.Close(calls);
        foreach (PendingCall call in calls)
        {
            call.CompleteWithException(error);
        }
    }
}
