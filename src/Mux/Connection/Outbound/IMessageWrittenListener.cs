namespace Mux.Connection;

/// <summary>
/// Told once a message has been written whole into the connection's output, so that the frames
/// queued after that moment go out after all of it. A message in fragments is written over many
/// writer turns, with other frames in between: a call that streams its arguments must not send a
/// stream frame before its Request's last fragment (docs/protocol.md, *Fragments*).
/// </summary>
internal interface IMessageWrittenListener
{
    /// <summary>Called once: on the sender's thread right after a whole frame was queued, or on the
    /// writer's thread right after a fragmented message's last fragment was written. Never called
    /// for a message the connection dropped on closing. Must not block, run user code or throw.</summary>
    void OnMessageWritten();
}
