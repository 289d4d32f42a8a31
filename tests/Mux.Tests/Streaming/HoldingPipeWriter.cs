using System.IO.Pipelines;

namespace Mux.Tests.Streaming;

/// <summary>
/// A connection's output that the test can stop in the middle of a writer turn: once armed
/// (<see cref="HoldNextWrite"/>), the next bytes written into it are passed on, then the writing
/// thread waits there, still holding the connection's writer role, until <see cref="Release"/>.
/// Meanwhile other threads queue frames that the held turn has not taken. Everything else goes
/// straight to the pipe it wraps.
/// </summary>
internal sealed class HoldingPipeWriter(PipeWriter inner) : PipeWriter
{
    private readonly ManualResetEventSlim _released = new(false);

    // 1 while the next Advance holds. Set by the test, cleared by the writer that holds.
    private int _armed;

    /// <summary>Completes when a writer is held.</summary>
    public TaskCompletionSource Held { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Holds the writer that next writes into this output, once it has written.</summary>
    public void HoldNextWrite() => Volatile.Write(ref _armed, 1);

    /// <summary>Lets the held writer go on (and any writer from now on).</summary>
    public void Release() => _released.Set();

    public override void Advance(int bytes)
    {
        inner.Advance(bytes);
        if (Interlocked.Exchange(ref _armed, 0) == 1)
        {
            Held.TrySetResult();

            // Bounded, so that a test that fails before it releases the writer does not hang the run.
            _released.Wait(TimeSpan.FromMinutes(1));
        }
    }

    public override Memory<byte> GetMemory(int sizeHint = 0) => inner.GetMemory(sizeHint);

    public override Span<byte> GetSpan(int sizeHint = 0) => inner.GetSpan(sizeHint);

    public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default) => inner.FlushAsync(cancellationToken);

    public override void CancelPendingFlush() => inner.CancelPendingFlush();

    public override void Complete(Exception? exception = null)
    {
        _released.Set(); // A held writer never outlives the output.
        inner.Complete(exception);
    }

    public override bool CanGetUnflushedBytes => inner.CanGetUnflushedBytes;

    public override long UnflushedBytes => inner.UnflushedBytes;
}
