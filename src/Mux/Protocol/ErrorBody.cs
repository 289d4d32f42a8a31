using MessagePack;

namespace Mux.Protocol;

/// <summary>A MessagePack array [code, message, remote exception type or nil].</summary>
internal readonly struct ErrorBody(MuxStatusCode code, string message, string? remoteType) : IFrameBody
{
    public MuxStatusCode Code { get; } = code;

    public string Message { get; } = message;

    public string? RemoteType { get; } = remoteType;

    public void Write(ref MessagePackWriter writer)
    {
        writer.WriteArrayHeader(3);
        writer.Write((int)Code);
        writer.Write(Message);
        writer.Write(RemoteType);
    }

    /// <summary>One that cannot be read becomes a ProtocolError. Either side reads these, so messages say "peer".</summary>

    public static ErrorBody Read(ReadOnlyMemory<byte> payload)
    {
        try
        {
            var reader = new MessagePackReader(payload);
            int count = reader.ReadArrayHeader();
            if (count < 2)
            {
                return new ErrorBody(MuxStatusCode.ProtocolError, $"The peer sent an error with {count} fields; at least 2 are required.", null);
            }

            var code = (MuxStatusCode)reader.ReadInt32();
            string message = reader.ReadString() ?? string.Empty;
            string? remoteType = count > 2 ? reader.ReadString() : null;
            return new ErrorBody(code, message, remoteType);
        }
        catch (Exception ex) when (MalformedMessagePack.IsReadFailure(ex))
        {
            return new ErrorBody(MuxStatusCode.ProtocolError, "The peer sent an error that could not be read: " + ex.Message, null);
        }
    }
}
