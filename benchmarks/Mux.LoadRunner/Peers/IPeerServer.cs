namespace Mux.LoadRunner.Peers;

/// <summary>A peer library's benchmark server, started in the server child process.</summary>
internal interface IPeerServer : IAsyncDisposable
{
    /// <summary>The port it listens on (127.0.0.1).</summary>
    int Port { get; }

    /// <summary>The window marks the orchestrator's "begin" and "end" lines set.</summary>
    WindowMarks Marks { get; }
}
