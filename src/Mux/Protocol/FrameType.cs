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

    /// <summary>One item of a call's stream, as MessagePack, sent within the credit its consumer granted.</summary>
    StreamItem = 10,

    /// <summary>The client's stream of a call has ended: empty when it completed, an Error body when its producer failed.
    /// A server's stream ends with the call's Response or Error.</summary>
    StreamEnd = 11,

    /// <summary>u32: how many more items of the call's stream the sender of this frame accepts.</summary>
    StreamCredit = 12,

    /// <summary>The next bytes of a message split across frames.</summary>

    Continuation = 14,
}
