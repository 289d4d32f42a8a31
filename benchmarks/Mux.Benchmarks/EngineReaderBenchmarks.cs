using System.IO.Pipelines;
using BenchmarkDotNet.Attributes;

namespace Mux.Benchmarks;

/// <summary>
/// The engine's reader loop alone (issue 24): one connection's reader splits and dispatches a
/// pre-encoded buffer of 65,536 frames for call ids it never used, fed through its receive pipe in
/// 64 KiB writes as a socket's receive loop would (each flush runs the reader inline, so the
/// invocation ends when the last frame has been handed on). Frames that do no per-call work:
/// <see cref="InboundFrame.Response"/> goes through the answer path's lookup, StreamCredit only
/// through the split and the dispatch.
/// </summary>
/// <remarks>
/// One operation is one frame: Mean is the time per frame (the 64 KiB copies into the pipe, about a
/// nanosecond a frame, included), Frames/s its inverse. Each invocation checks the connection's
/// frames-received statistic against the frames fed. The internals it uses are all in
/// <see cref="EngineSeam"/>.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(EngineJobConfig))]
public class EngineReaderBenchmarks
{
    private const int FramesPerInvoke = 64 * 1024;

    // What one socket receive hands the reader at most (TransportPipes.ReceiveBufferSize).
    private const int ReceiveSize = 64 * 1024;

    private EngineSeam _seam = null!;
    private Task _drain = Task.CompletedTask;
    private byte[] _frames = [];

    [Params(InboundFrame.Response, InboundFrame.StreamCredit)]
    public InboundFrame Frames { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _frames = EngineSeam.EncodeFrames(Frames, FramesPerInvoke);
        _seam = EngineSeam.ConnectAsync(reader => _drain = DiscardAsync(reader)).GetAwaiter().GetResult();
    }

    [Benchmark(OperationsPerInvoke = FramesPerInvoke)]
    public void Dispatch()
    {
        long before = _seam.FramesReceived;
        PipeWriter writer = _seam.ToConnection;
        ReadOnlySpan<byte> rest = _frames;
        while (!rest.IsEmpty)
        {
            int size = Math.Min(rest.Length, ReceiveSize);
            rest[..size].CopyTo(writer.GetSpan(size));
            writer.Advance(size);
            ValueTask<FlushResult> flush = writer.FlushAsync();
            if (!flush.IsCompletedSuccessfully)
            {
                flush.AsTask().GetAwaiter().GetResult(); // The reader paused us (it never should here).
            }

            rest = rest[size..];
        }

        long dispatched = _seam.FramesReceived - before;
        if (dispatched != FramesPerInvoke)
        {
            throw new InvalidOperationException($"The reader handed on {dispatched} frames of the {FramesPerInvoke} fed.");
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _seam.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _drain.GetAwaiter().GetResult();
    }

    /// <summary>Takes whatever the connection sends (its Hello) and drops it.</summary>
    private static async Task DiscardAsync(PipeReader reader)
    {
        while (true)
        {
            ReadResult result = await reader.ReadAsync();
            reader.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted || result.IsCanceled)
            {
                break;
            }
        }

        await reader.CompleteAsync();
    }
}
