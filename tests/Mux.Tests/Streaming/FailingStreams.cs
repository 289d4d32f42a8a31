namespace Mux.Tests.Streaming;

/// <summary>Either side's <see cref="IFailingStreams"/>. With <see cref="HoldAfterFirstItem"/>, a
/// stream's item 0 goes out alone: the output holds the writer that writes it, and the handler makes
/// the rest only once the test opens <see cref="Proceed"/>.</summary>
public sealed class FailingStreams : IFailingStreams
{
    private readonly TaskCompletionSource _released = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>The serving side's output, armed before each stream's item 0; null for none.</summary>
    internal HoldingPipeWriter? HoldAfterFirstItem { get; init; }

    /// <summary>Whether each item after the first is made after a yield to the thread pool, as by a
    /// producer that awaits something per item: the stream's frames then trickle in while the
    /// writer loop runs for the other calls, rather than arriving as one batch.</summary>
    public bool YieldsPerItem { get; init; }

    /// <summary>Opened by the test: the held stream makes its other items and fails.</summary>
    public TaskCompletionSource Proceed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when a Hold handler runs.</summary>
    public TaskCompletionSource Holding { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>The message a stream of <see cref="ItemsThenFailure"/> fails with.</summary>
    public static string Message(int length) => "failed: " + new string('x', length - 8);

    public async IAsyncEnumerable<int> ItemsThenFailure(int count, int messageLength)
    {
        HoldAfterFirstItem?.HoldNextWrite();
        yield return 0;
        if (HoldAfterFirstItem is not null)
        {
            await Proceed.Task;
        }

        for (int i = 1; i < count; i++)
        {
            if (YieldsPerItem)
            {
                await Task.Yield();
            }

            yield return i;
        }

        throw new MuxRemoteException(Message(messageLength));
    }

    public Task Hold()
    {
        Holding.TrySetResult();
        return _released.Task;
    }

    public void ReleaseHold() => _released.TrySetResult();
}
