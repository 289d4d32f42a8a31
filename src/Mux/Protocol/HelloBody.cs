using MessagePack;

namespace Mux.Protocol;

/// <summary>The body of Hello and HelloAck as a frame body.</summary>
internal readonly struct HelloBody(HandshakeSettings settings) : IFrameBody
{
    private readonly HandshakeSettings _settings = settings;

    public void Write(ref MessagePackWriter writer) => FrameWriter.WriteHelloBody(ref writer, _settings);
}
