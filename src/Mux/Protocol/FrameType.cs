namespace Mux.Protocol;

/// <summary>The kind of a frame: the byte after the length prefix. See docs/protocol.md.</summary>
internal enum FrameType : byte
{
    Hello = 1,
    HelloAck = 2,
    Request = 3,
    Response = 4,
    Error = 5,
    Cancel = 6,
    Ping = 7,
    Pong = 8,
    GoAway = 9,
}
