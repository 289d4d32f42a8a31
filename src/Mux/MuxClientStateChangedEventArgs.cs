namespace Mux;

/// <summary>Describes a change of <see cref="MuxClient.State"/>, for <see cref="MuxClient.StateChanged"/>.</summary>
public sealed class MuxClientStateChangedEventArgs : EventArgs
{
    /// <summary>Creates the description of a change.</summary>
    /// <param name="previousState">The state before the change.</param>
    /// <param name="state">The state after the change.</param>
    /// <param name="error">What caused the change, if it was a failure.</param>
    public MuxClientStateChangedEventArgs(MuxClientState previousState, MuxClientState state, Exception? error)
    {
        PreviousState = previousState;
        State = state;
        Error = error;
    }

    /// <summary>The state before the change.</summary>
    public MuxClientState PreviousState { get; }

    /// <summary>The state after the change.</summary>
    public MuxClientState State { get; }

    /// <summary>Why the connection was lost or could not be made (usually a
    /// <see cref="MuxConnectionException"/>); <see langword="null"/> when nothing failed.</summary>
    public Exception? Error { get; }
}
