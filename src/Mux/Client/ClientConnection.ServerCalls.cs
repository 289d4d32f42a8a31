using System.Diagnostics.CodeAnalysis;
using Mux.Connection;
using Mux.Protocol;
using Mux.Server;

namespace Mux.Client;

/// <summary>
/// Calls the server starts to this client (docs/protocol.md, "Calls from server to client"): a
/// Request with ServerInitiated runs a service the client added (MuxClient.AddService) through the
/// same <see cref="MuxServerCall"/> machinery a server uses, on the thread pool (never on the
/// reader loop, so a slow handler holds up nothing else), and is answered with a Response or Error
/// that carries ServerInitiated too.
/// </summary>
internal sealed partial class ClientConnection
{
    // Sizes the table of running server calls (it grows past this through its overflow); calls
    // from a server are rarer than calls to it.
    private const int ServedCallsHint = 32;

    // The calls the server started that run here, by id: for its Cancel frames and for cancelling
    // them all on close. The reader loop is its only adder; finishing calls remove themselves.
    private readonly ServerCallTable _servedCalls = new(ServedCallsHint);

    // Finished call objects kept for the next server calls (rented by the reader loop, returned by finishers).
    private readonly ServerCallPool _servedCallPool = new();

    // The services this client serves: its MuxClient's, shared by all its connections; empty for
    // a connection made without one. Immutable reference (the set itself grows under its own lock).
    private ClientServices _services = s_noServices;

    private static readonly ClientServices s_noServices = new();

    /// <summary>A frame with ServerInitiated: a Request of the server's, or its Cancel of one.</summary>
    private void OnServerCallFrame(in Frame frame)
    {
        switch (frame.Type)
        {
            case FrameType.Request:
                ServeServerCall(frame);
                break;
            case FrameType.Cancel:
                // Unknown ids are calls that already finished; a call found cannot be reused for
                // another request before this (reader loop) thread dispatches again.
                _servedCalls.Find(frame.CallId)?.RequestCancel();
                break;
            default:
                throw new MuxProtocolException($"The server sent a {frame.Type} frame with ServerInitiated (0x08); a server sends only Request and Cancel with it.");
        }
    }

    /// <summary>A Request of the server's over this client's MaxMessageSize (from a server that
    /// ignored the limit this client announced): answered at once with MessageTooLarge and not run;
    /// the rest of it is skipped as it arrives, and the connection stays up.</summary>
    private void OnServerCallTooLarge(in Frame first)
    {
        if (first.Type != FrameType.Request)
        {
            throw new MuxProtocolException($"The server sent a {first.Type} frame with ServerInitiated (0x08); a server sends only Request and Cancel with it.");
        }

        SendServedError(first.CallId, new ErrorBody(
            MuxStatusCode.MessageTooLarge,
            $"The server's call to {MuxServiceRegistry.GetMethodDisplayName(first.MethodId)} is {first.MessageSize} bytes, over this client's MaxMessageSize of {MaxMessageSize} bytes ({DescribeSize(MaxMessageSize)}, MuxClientOptions.MaxMessageSize); it was not run. Send a smaller argument, or raise MuxClientOptions.MaxMessageSize.",
            null));
    }

    private void ServeServerCall(in Frame frame)
    {
        if (!_services.TryGet(frame.MethodId, out ServerMethod? method))
        {
            SendServedError(frame.CallId, new ErrorBody(MuxStatusCode.UnknownMethod, DescribeUnknownServerCall(frame.MethodId), null));
            return;
        }

        MuxServerCall call = _servedCallPool.TryRent() ?? new MuxServerCall(this, SerializerOptions, FrameFlags.ServerInitiated);
        call.Start(frame.CallId, method, frame.Payload, long.MaxValue); // A server sends no deadline with its calls.
        if (!_servedCalls.TryAdd(call))
        {
            ThrowServerCallIdReused(frame.CallId);
        }

        ThreadPool.UnsafeQueueUserWorkItem(call, preferLocal: false);
    }

    /// <summary>"… IProgressSink.Report …" when the contract is loaded here, else the bare id.</summary>
    private static string DescribeUnknownServerCall(uint methodId)
    {
        string name = MuxServiceRegistry.GetMethodDisplayName(methodId);
        if (name.StartsWith("method ", StringComparison.Ordinal))
        {
            return $"The client has no method with id 0x{methodId:x8}: it did not add that service with MuxClient.AddService, or the client and server contracts differ.";
        }

        string service = name[..name.LastIndexOf('.')];
        return $"The client does not serve {name} (id 0x{methodId:x8}): it did not add {service} with MuxClient.AddService<{service}>.";
    }

    [DoesNotReturn]
    private static void ThrowServerCallIdReused(uint callId) =>
        throw new MuxProtocolException($"The server reused call id {callId} (ServerInitiated) while that call was still running on the client.");

    internal override void SendFailure(MuxServerCall call, Exception failure)
    {
        if (IsClosed)
        {
            return; // Nobody is listening.
        }

        if (!TryDescribeFailure(call, failure, out ErrorBody error))
        {
            // Like a server without EnableDetailedErrors: an exception's message may carry internals.
            ClientLog.ServerCallFailed(Logger, call.MethodName, Name, failure);
            error = new ErrorBody(MuxStatusCode.HandlerFailed, $"{call.MethodName} failed on the client. The client's log has the exception.", null);
        }

        SendServedError(call.CallId, error);
    }

    private void SendServedError(uint callId, ErrorBody error)
    {
        try
        {
            SendFrame(FrameType.Error, callId, 0, ref error, FrameFlags.ServerInitiated);
        }
        catch (MuxConnectionException)
        {
            // The connection closed meanwhile: the server fails the call itself.
        }
        catch (FrameTooLargeException)
        {
            // An enormous message: send a short one instead.
            var shortError = new ErrorBody(error.Code, error.Message[..Math.Min(error.Message.Length, 1024)], error.RemoteType);
            SendFrame(FrameType.Error, callId, 0, ref shortError, FrameFlags.ServerInitiated);
        }
    }

    internal override void OnCallFinished(MuxServerCall call)
    {
        _servedCalls.Remove(call);
        _servedCallPool.Return(call);
    }

    /// <summary>The connection closed: the handlers of the server's calls still running are cancelled.</summary>
    private void CancelServedCalls()
    {
        foreach (MuxServerCall call in _servedCalls.Snapshot())
        {
            call.RequestCancel();
        }
    }
}
