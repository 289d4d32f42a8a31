using System.Runtime.CompilerServices;
using Mux.Protocol;

namespace Mux.Connection;

// Every Error frame the serving role sends: refusals of requests it does not run, and failures of calls that ran.
internal sealed partial class IncomingCalls
{
    /// <summary>A request beyond the cap this side announced: a Mux caller waits for a slot instead.</summary>
    private void RefuseOverLimit(in Frame frame) =>
        SendError(frame.CallId, MuxStatusCode.TooManyCalls,
            $"The {_connection.SideName} did not run {MuxServiceRegistry.GetMethodDisplayName(frame.MethodId)}: this connection already " +
            $"runs {_maxConcurrentCalls} calls, the most it allows ({_connection.OptionsName}.MaxConcurrentCallsPerConnection, advertised " +
            $"in the handshake). A {_connection.PeerName} must wait for an answer before sending more.");

    /// <summary>A request past the server's MaxConcurrentCalls: never run, so its caller may retry it (elsewhere).</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void RefuseOverloaded(uint callId, ServerCallLimit limit)
    {
        limit.OnRefused(_connection.Logger);
        SendError(callId, MuxStatusCode.Overloaded, limit.RefusalMessage);
    }

    /// <summary>A request whose deadline header says 0 ms: nobody waits for its answer.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void RefuseExpired(uint callId, ServiceMethod method)
    {
        ReleaseSlot();
        SendError(callId, MuxStatusCode.DeadlineExceeded,
            $"The {_connection.SideName} did not run {method.Name}: the caller's deadline had passed when the request arrived.");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void RefuseUnknownMethod(uint callId, uint methodId)
    {
        string name = MuxServiceRegistry.GetMethodDisplayName(methodId);
        bool known = !name.StartsWith("method ", StringComparison.Ordinal);
        string message;
        if (_connection.IsServer)
        {
            ConnectionLog.UnknownMethod(_connection.Logger, _connection.Name, name);
            message = $"The server has no method {(known ? $"{name} (id 0x{methodId:x8})" : $"with id 0x{methodId:x8}")}. " +
                "The client and server contracts differ, or the service was not added to the server.";
        }
        else if (known)
        {
            string service = name[..name.LastIndexOf('.')];
            message = $"The client does not serve {name} (id 0x{methodId:x8}): it did not add {service} with " +
                $"MuxClient.AddService<{service}>.";
        }
        else
        {
            message = $"The client has no method with id 0x{methodId:x8}: it did not add that service with MuxClient.AddService, " +
                "or the client and server contracts differ.";
        }

        SendError(callId, MuxStatusCode.UnknownMethod, message);
    }

    /// <summary>A Request over this side's MaxMessageSize: refused and not run; the rest of it is skipped as it arrives.</summary>
    public void OnRequestTooLarge(in Frame first)
    {
        NoteReceived(first.CallId);
        int max = _connection.Settings.MaxMessageSize;
        string options = _connection.OptionsName;
        SendError(first.CallId, MuxStatusCode.MessageTooLarge,
            $"The {_connection.PeerName}'s call to {MuxServiceRegistry.GetMethodDisplayName(first.MethodId)} is {first.MessageSize} bytes, " +
            $"over this {_connection.SideName}'s MaxMessageSize of {max} bytes ({MuxConnection.DescribeSize(max)}, {options}.MaxMessageSize); " +
            $"it was not run. Send a smaller argument, or raise {options}.MaxMessageSize.");
    }

    /// <summary>Returns the status the Error carries, also when the connection has closed: the status telemetry reports.</summary>
    public MuxStatusCode SendFailure(IncomingCall call, Exception failure)
    {
        if (call.IsAnswered)
        {
            // Its caller has the Response: an Error after it would be a second answer to one call.
            ConnectionLog.HandlerFailed(_connection.Logger, call.MethodName, _connection.Name, failure);
            return MuxStatusCode.Ok;
        }

        call.ReleaseSlot();
        ErrorBody? described = DescribeFailure(call, failure);
        if (_connection.IsClosed)
        {
            return described?.Code ?? MuxStatusCode.HandlerFailed; // Nobody is listening.
        }

        if (described is { } error)
        {
            SendError(call.CallId, error.Code, error.Message, error.RemoteType);
            return error.Code;
        }

        // Any other exception: its message may carry internals (SQL, paths, names), so only the log
        // gets it, unless the server's EnableDetailedErrors sends it to callers (a client's never does).
        string message;
        if (_connection.IsServer)
        {
            ConnectionLog.HandlerFailed(_connection.Logger, call.MethodName, _connection.Name, failure);
            message = $"{call.MethodName} failed on the server. The server's log has the exception; " +
                "MuxServerOptions.EnableDetailedErrors sends its message to callers.";
        }
        else
        {
            ConnectionLog.ServerCallFailed(_connection.Logger, call.MethodName, _connection.Name, failure);
            message = $"{call.MethodName} failed on the client. The client's log has the exception.";
        }

        SendError(call.CallId, MuxStatusCode.HandlerFailed, SendsDetailedErrors ? failure.Message : message,
            SendsDetailedErrors ? failure.GetType().FullName : null);
        return MuxStatusCode.HandlerFailed;
    }

    /// <summary>The Error body of a failure whose status the caller can act on; null for any other exception.</summary>
    private static ErrorBody? DescribeFailure(IncomingCall call, Exception failure) => failure switch
    {
        InvalidArgumentsException => new ErrorBody(MuxStatusCode.InvalidArguments, failure.Message, null),
        FrameTooLargeException => new ErrorBody(MuxStatusCode.FrameTooLarge, failure.Message, null),

        // Before Canceled: the caller gave up at its deadline, whatever else happened.
        OperationCanceledException when call.DeadlinePassed =>
            new ErrorBody(MuxStatusCode.DeadlineExceeded, $"{call.MethodName} stopped at the caller's deadline.", failure.GetType().FullName),
        MessageTooLargeException =>
            new ErrorBody(MuxStatusCode.MessageTooLarge, $"The response of {call.MethodName} was not sent: {failure.Message}", null),
        OperationCanceledException when call.IsCancellationRequested =>
            new ErrorBody(MuxStatusCode.Canceled, $"{call.MethodName} was canceled.", failure.GetType().FullName),

        // The handler chose the status and message its caller sees.
        MuxRemoteException chosen => new ErrorBody(
            chosen.StatusCode == MuxStatusCode.Ok ? MuxStatusCode.HandlerFailed : chosen.StatusCode, chosen.Message, chosen.RemoteExceptionType),
        _ => null,
    };

    private void SendError(uint callId, MuxStatusCode code, string message, string? remoteType = null) =>
        _outbound.TrySendError(FrameType.Error, callId, code, message, remoteType, IdSpace);
}
