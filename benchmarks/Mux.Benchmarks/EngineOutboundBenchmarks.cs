using System.IO.Pipelines;
using BenchmarkDotNet.Attributes;

namespace Mux.Benchmarks;

/// <summary>
/// The engine's outbound path alone (issue 24): N sender threads send small frames (14-byte
/// StreamCredit frames for made-up call ids) through ONE connection, whose far end is a sink that
/// drains the bytes as they are flushed (inline on the flushing thread, as the socket transport's
/// send loop runs). No peer parses them, so what is timed is encoding, the queue, the writer role
/// and the flushes: from releasing the senders until the sink has every byte.
/// </summary>
/// <remarks>
/// One operation is one frame (OperationsPerInvoke), so Mean is the time per frame, Frames/s its
/// inverse, and MemoryDiagnoser's Allocated (every thread's) the bytes allocated per frame.
/// <para>
/// <see cref="CallsInFlight"/> false: the connection holds no calls, so a sender that finds the
/// writer free writes and flushes its frame itself (the idle path). True: it holds two calls nobody
/// answers, so it takes itself to be under load and every frame is queued for the writer role
/// (the path of a loaded connection). Issue 24's target: Frames/s at 16 and at 64 senders at least
/// that at 1, on the loaded path.
/// </para>
/// The connection and the sender threads are made once per case; the internals it uses are all in
/// <see cref="EngineSeam"/>.
/// </remarks>
[MemoryDiagnoser]
[Config(typeof(EngineJobConfig))]
public class EngineOutboundBenchmarks
{
    private const int FramesPerInvoke = 64 * 1024; // divisible by every Senders value

    private EngineSeam _seam = null!;
    private Task _drain = Task.CompletedTask;

    // Bytes the sink has drained: written only by the sink (the pipe runs one reader callback at a
    // time), read by the benchmark thread.
    private long _drained;

    // The byte count at which the sink sets _reached: written by the benchmark thread before it
    // releases the senders, read by the sink.
    private long _target = long.MaxValue;
    private readonly ManualResetEventSlim _reached = new();

    private Thread[] _senders = [];
    private SemaphoreSlim[] _go = [];
    private CountdownEvent _sent = null!;
    private volatile bool _stopping;

    [Params(1, 2, 4, 8, 16, 64)]
    public int Senders { get; set; }

    [Params(false, true)]
    public bool CallsInFlight { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _seam = EngineSeam.ConnectAsync(reader => _drain = DrainAsync(reader)).GetAwaiter().GetResult();
        if (CallsInFlight)
        {
            _seam.HoldCalls(2);
        }

        _sent = new CountdownEvent(Senders);
        _go = new SemaphoreSlim[Senders];
        _senders = new Thread[Senders];
        for (int i = 0; i < Senders; i++)
        {
            _go[i] = new SemaphoreSlim(0);
            _senders[i] = new Thread(SenderLoop) { IsBackground = true, Name = $"sender {i}" };
            _senders[i].Start(i);
        }

        // The held calls' Requests may still be on their way to the sink through the thread pool:
        // let them land before the first invocation counts bytes.
        Thread.Sleep(100);
    }

    [Benchmark(OperationsPerInvoke = FramesPerInvoke)]
    public void Send()
    {
        _reached.Reset();
        Volatile.Write(ref _target, Volatile.Read(ref _drained) + ((long)FramesPerInvoke * EngineSeam.SmallFrameBytes));
        _sent.Reset(Senders);
        foreach (SemaphoreSlim go in _go)
        {
            go.Release();
        }

        _sent.Wait();
        if (!_reached.Wait(TimeSpan.FromSeconds(30)))
        {
            throw new InvalidOperationException($"The sink drained {Volatile.Read(ref _drained)} bytes of the {Volatile.Read(ref _target)} expected: frames were lost.");
        }
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _stopping = true;
        foreach (SemaphoreSlim go in _go)
        {
            go.Release();
        }

        foreach (Thread sender in _senders)
        {
            sender.Join();
        }

        _seam.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _drain.GetAwaiter().GetResult();
        _sent.Dispose();
        _reached.Dispose();
        foreach (SemaphoreSlim go in _go)
        {
            go.Dispose();
        }
    }

    private void SenderLoop(object? state)
    {
        int index = (int)state!;
        SemaphoreSlim go = _go[index];
        uint callId = 1_000_000u + (uint)index;
        int frames = FramesPerInvoke / Senders;
        while (true)
        {
            go.Wait();
            if (_stopping)
            {
                return;
            }

            for (int i = 0; i < frames; i++)
            {
                _seam.SendSmallFrame(callId);
            }

            _sent.Signal();
        }
    }

    /// <summary>The sink: takes whatever was flushed at once and counts it.</summary>
    private async Task DrainAsync(PipeReader reader)
    {
        while (true)
        {
            ReadResult result = await reader.ReadAsync();
            long drained = _drained + result.Buffer.Length;
            reader.AdvanceTo(result.Buffer.End);
            Volatile.Write(ref _drained, drained);
            if (drained >= Volatile.Read(ref _target))
            {
                _reached.Set();
            }

            if (result.IsCompleted || result.IsCanceled)
            {
                break;
            }
        }

        await reader.CompleteAsync();
    }
}
