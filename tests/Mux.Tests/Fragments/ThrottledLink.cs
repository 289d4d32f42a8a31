using System.Buffers;
using System.IO.Pipelines;

namespace Mux.Tests.Fragments;

/// <summary>
/// An in-memory connection whose client-to-server direction the test meters: a pump forwards the
/// client's bytes to the server only up to an allowance (<see cref="Allow"/>), so a large request
/// can be stopped at a known point in the middle of its transfer, deterministically. The client's
/// side buffers little (its writer waits once 256 KiB are unread), so a frame the client queues
/// while the link is held, such as a Cancel, is never buried behind the rest of a large message.
/// <see cref="CutAsync"/> loses the connection the way a dropped socket does. The other direction
/// is a plain pipe.
/// </summary>
internal sealed class ThrottledLink
{
    private readonly Pipe _up = new(new PipeOptions(pauseWriterThreshold: 256 * 1024, resumeWriterThreshold: 128 * 1024, useSynchronizationContext: false));
    private readonly Pipe _serverInput = new(new PipeOptions(pauseWriterThreshold: 0, useSynchronizationContext: false)); // Never full: the pump is the meter.
    private readonly Pipe _down = new(new PipeOptions(useSynchronizationContext: false));

    // Released on every change of the allowance, for a pump waiting for more.
    private readonly SemaphoreSlim _moreAllowed = new(0);
    private readonly CancellationTokenSource _cut = new();
    private readonly Task _pump;

    // How many bytes in all the pump may have forwarded; written by the test.
    private long _allowed = long.MaxValue;

    // How many it has forwarded; written by the pump only.
    private long _forwarded;

    public ThrottledLink() => _pump = PumpAsync();

    /// <summary>The client's end: reads what the server sends, writes through the meter.</summary>
    public IDuplexPipe ClientSide => new Ends(_down.Reader, _up.Writer);

    /// <summary>The server's end.</summary>
    public IDuplexPipe ServerSide => new Ends(_serverInput.Reader, _down.Writer);

    /// <summary>Bytes forwarded from the client to the server so far.</summary>
    public long Forwarded => Volatile.Read(ref _forwarded);

    /// <summary>Lets the pump forward until <paramref name="total"/> bytes have gone through in all.</summary>
    public void Allow(long total)
    {
        Volatile.Write(ref _allowed, total);
        _moreAllowed.Release();
    }

    /// <summary>Lets everything through from now on.</summary>
    public void Open() => Allow(long.MaxValue);

    /// <summary>Loses the connection: nothing more is forwarded, the server's reads fail and so
    /// do the client's writes, as when a socket is reset.</summary>
    public async Task CutAsync()
    {
        await _cut.CancelAsync();
        await _pump;
        var lost = new IOException("The test cut the link.");
        await _up.Reader.CompleteAsync(lost);
        await _serverInput.Writer.CompleteAsync(lost);
    }

    private async Task PumpAsync()
    {
        await Task.Yield();
        try
        {
            while (true)
            {
                ReadResult result = await _up.Reader.ReadAsync(_cut.Token);
                long room;
                while ((room = Volatile.Read(ref _allowed) - _forwarded) <= 0)
                {
                    await _moreAllowed.WaitAsync(_cut.Token);
                }

                ReadOnlySequence<byte> sent = result.Buffer.Slice(0, Math.Min(result.Buffer.Length, room));
                foreach (ReadOnlyMemory<byte> segment in sent)
                {
                    _serverInput.Writer.Write(segment.Span);
                }

                Volatile.Write(ref _forwarded, _forwarded + sent.Length);
                bool ended = result.IsCompleted && sent.Length == result.Buffer.Length;

                // Consumed and examined alike: what is left is read again at once, not after more arrives.
                _up.Reader.AdvanceTo(sent.End);
                FlushResult flushed = await _serverInput.Writer.FlushAsync(_cut.Token);
                if (ended || flushed.IsCompleted)
                {
                    break;
                }
            }

            // The client closed its side: so does the server's input.
            await _serverInput.Writer.CompleteAsync();
        }
        catch (OperationCanceledException) when (_cut.IsCancellationRequested)
        {
            // CutAsync: it completes both ends.
        }
    }

    private sealed class Ends(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
