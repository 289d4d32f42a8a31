using Mux.Protocol;
using Mux.Serialization;

namespace Mux.Connection;

/// <summary>
/// Both ends of a connection serve calls through <see cref="MuxServerCall"/>: a server the calls of
/// its client, a client the calls its server starts (flag ServerInitiated, see docs/protocol.md).
/// These are the hooks a served call reaches its connection through.
/// </summary>
internal abstract partial class MuxConnection
{
    /// <summary>Queues a served call's result; its slot (if the side counts slots) is given back
    /// first, so that a caller sending its next request on reading the answer finds it free.</summary>
    internal void SendResponse<T>(MuxServerCall call, ref ResultBody<T> body)
    {
        call.ReleaseSlot();
        SendFrame(FrameType.Response, call.CallId, 0, ref body, call.AnswerFlags);
    }

    /// <summary>Turns a served call's failure into an Error frame its caller can act on.</summary>
    internal abstract void SendFailure(MuxServerCall call, Exception failure);

    /// <summary>A served call has finished (answered or not): the connection forgets it and may
    /// reuse its object.</summary>
    internal abstract void OnCallFinished(MuxServerCall call);

    /// <summary>Gives back the slot a served call held; only a server counts them.</summary>
    internal virtual void ReleaseCallSlot()
    {
    }

    /// <summary>The Error body for the failures whose status the caller can act on (bad arguments,
    /// a frame or message too large, past the caller's deadline, cancelled, or a <see cref="MuxRemoteException"/> the handler chose); false for
    /// any other exception, which each side reports in its own way.</summary>
    internal static bool TryDescribeFailure(MuxServerCall call, Exception failure, out ErrorBody error)
    {
        switch (failure)
        {
            case InvalidArgumentsException:
                error = new ErrorBody(MuxStatusCode.InvalidArguments, failure.Message, null);
                return true;
            case FrameTooLargeException:
                error = new ErrorBody(MuxStatusCode.FrameTooLarge, failure.Message, null);
                return true;
            case OperationCanceledException when call.DeadlinePassed:
                // Before Canceled: the caller gave up at its deadline, whatever else happened.
                error = new ErrorBody(MuxStatusCode.DeadlineExceeded, $"{call.MethodName} stopped at the caller's deadline.", failure.GetType().FullName);
                return true;
            case MessageTooLargeException:
                error = new ErrorBody(MuxStatusCode.MessageTooLarge, $"The response of {call.MethodName} was not sent: {failure.Message}", null);
                return true;
            case OperationCanceledException when call.IsCancellationRequested:
                error = new ErrorBody(MuxStatusCode.Canceled, $"{call.MethodName} was canceled.", failure.GetType().FullName);
                return true;
            case MuxRemoteException chosen:
                // The handler chose the status and message its caller sees.
                error = new ErrorBody(chosen.StatusCode == MuxStatusCode.Ok ? MuxStatusCode.HandlerFailed : chosen.StatusCode, chosen.Message, chosen.RemoteExceptionType);
                return true;
            default:
                error = default;
                return false;
        }
    }
}
