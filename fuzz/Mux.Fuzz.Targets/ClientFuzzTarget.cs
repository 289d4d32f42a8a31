using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics;
using System.IO.Pipelines;
using MessagePack;
using Mux.Protocol;

namespace Mux.Fuzz;

/// <summary>What a run of the client target saw, for tests that check a well-formed input did what it says.</summary>
/// <param name="Connected">Whether the handshake completed.</param>
/// <param name="CallsSucceeded">How many of the client's <see cref="ClientFuzzTarget.Calls"/> returned normally.</param>
/// <param name="ServerCallsAnswered">How many Responses and Errors the client sent to the server's own calls.</param>
public sealed record ClientRun(bool Connected, int CallsSucceeded, int ServerCallsAnswered);

/// <summary>
/// The client side of the fuzz target: a real <see cref="MuxClient"/> over in-memory pipes whose
/// server is the input. The client makes one call of each kind (<see cref="Calls"/>: results of
/// every formatter the fuzz contracts use, and two streams of results) and serves
/// <see cref="IFuzzClientSide"/> to its server; the input is everything the server sends: its
/// HelloAck, then Responses, Errors, StreamItems, GoAway, Pings, and Requests of its own
/// (ServerInitiated). A finding is the process dying (a stack overflow, an exception escaping on a
/// thread of its own), a client that hangs (a call still pending <see cref="Patience"/> after its
/// server closed), a malformed frame from the client, or a call that fails with an exception the
/// client does not design for.
/// </summary>
public static class ClientFuzzTarget
{
    /// <summary>How long every step may take before the client counts as hung.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(5);

    /// <summary>How long the client may stay silent, its calls not all ended, before the server stops
    /// waiting for it (the input may answer only some calls, or none).</summary>
    public static readonly TimeSpan QuietTime = TimeSpan.FromMilliseconds(100);

    /// <summary>
    /// The client's calls, made in this order at once after the handshake. The call ids the client
    /// picks depend on the core each call ran on, so a frame of the input without ServerInitiated
    /// whose call id is 1 to 8 is sent with the id of the client's call to the method at that
    /// position (id 1 answers Add, id 7 feeds the Shapes stream), wherever it came on the wire.
    /// </summary>
    public static readonly IReadOnlyList<string> Calls =
    [
        "Mux.Fuzz.IFuzzService.Add",
        "Mux.Fuzz.IFuzzService.Echo",
        "Mux.Fuzz.IFuzzService.Count",
        "Mux.Fuzz.IFuzzService.Shape",
        "Mux.Fuzz.IFuzzService.Nothing",
        "Mux.Fuzz.IFuzzStreams.Anything",
        "Mux.Fuzz.IFuzzStreams.Shapes",
        "Mux.Fuzz.IFuzzStreams.Values",
    ];

    private static readonly uint[] s_callMethodIds = Calls.Select(MuxMethodId.Compute).ToArray();

    /// <summary>Runs the input against a client; returns normally unless it finds something.</summary>
    public static void Client(ReadOnlySpan<byte> data) => Run(data.ToArray(), QuietTime);

    /// <summary>Runs <paramref name="input"/> (not changed) with the given quiet time.</summary>
    public static ClientRun Run(byte[] input, TimeSpan quietTime) => RunAsync(input, quietTime).GetAwaiter().GetResult();

    private static async Task<ClientRun> RunAsync(byte[] input, TimeSpan quietTime)
    {
        // Inline schedulers, as the in-memory transport's: each side reacts within the other's write.
        var options = new PipeOptions(readerScheduler: PipeScheduler.Inline, writerScheduler: PipeScheduler.Inline, pauseWriterThreshold: 64L * 1024 * 1024, resumeWriterThreshold: 32L * 1024 * 1024, useSynchronizationContext: false);
        var toClient = new Pipe(options);
        var toServer = new Pipe(options);
        var output = new ClientOutput();
        Task reading = output.ReadAsync(toServer.Reader);
        using var patience = new CancellationTokenSource(Patience * 4);
        byte[] script = (byte[])input.Clone();
        bool whole = TryFindFirstFrameEnd(script, out int helloAckEnd);

        Task<MuxClient> connecting = MuxClient.ConnectAsync(
            new Duplex(toClient.Reader, toServer.Writer),
            new MuxClientOptions { KeepAliveInterval = Timeout.InfiniteTimeSpan, AutoReconnect = false });
        await toClient.Writer.WriteAsync(script.AsMemory(0, helloAckEnd)).ConfigureAwait(false);
        if (!whole)
        {
            // The input ends inside its first frame: the server goes away without a whole HelloAck.
            // (A whole first frame, HelloAck or not, the client takes or refuses at once.)
            await toClient.Writer.CompleteAsync().ConfigureAwait(false);
        }

        MuxClient client;
        try
        {
            client = await connecting.WaitAsync(Patience).ConfigureAwait(false);
        }
        catch (MuxConnectionException)
        {
            // The designed answer to a HelloAck that is malformed, refused or missing.
            if (whole)
            {
                await toClient.Writer.CompleteAsync().ConfigureAwait(false);
            }

            await reading.WaitAsync(Patience).ConfigureAwait(false);
            return new ClientRun(false, 0, output.ServerCallsAnswered);
        }
        catch (TimeoutException ex)
        {
            throw new TimeoutException($"The client's connect neither completed nor failed within {Patience.TotalSeconds} s of its server closing ({input.Length} bytes of input).", ex);
        }

        Task[] calls;
        await using (client.ConfigureAwait(false))
        {
            client.AddService<IFuzzClientSide>(new FuzzClientSide());
            calls = StartCalls(client);

            // The client's Requests, so the input's ids can name its calls; then the rest of the input.
            await WaitUntilQuietAsync(() => output.RequestsSeen(s_callMethodIds) == s_callMethodIds.Length, output, calls, quietTime, patience.Token).ConfigureAwait(false);
            MapCallIds(script, helloAckEnd, output.CallIds(s_callMethodIds));
            await toClient.Writer.WriteAsync(script.AsMemory(helloAckEnd)).ConfigureAwait(false);

            // Until every call has ended or the client has gone quiet; then the server closes, which
            // ends whatever is left (a call the input never answered) with the connection.
            await WaitUntilQuietAsync(() => Array.TrueForAll(calls, c => c.IsCompleted), output, calls, quietTime, patience.Token).ConfigureAwait(false);
            await toClient.Writer.CompleteAsync().ConfigureAwait(false);
            try
            {
                await Task.WhenAll(calls).WaitAsync(Patience).ConfigureAwait(false);
            }
            catch (TimeoutException ex)
            {
                string pending = string.Join(", ", Enumerable.Range(0, calls.Length).Where(i => !calls[i].IsCompleted).Select(i => Calls[i]));
                throw new TimeoutException($"The client's calls {pending} were still pending {Patience.TotalSeconds} s after its server closed ({input.Length} bytes of input).", ex);
            }
            catch (Exception)
            {
                // Each call's outcome is judged below.
            }
        }

        for (int i = 0; i < calls.Length; i++)
        {
            if (calls[i].Exception?.InnerException is { } failure && !IsDesigned(failure))
            {
                throw new InvalidOperationException($"The client's call {Calls[i]} failed with an exception the client does not design for: {failure.GetType().Name}: {failure.Message}", failure);
            }
        }

        await reading.WaitAsync(Patience).ConfigureAwait(false);
        return new ClientRun(true, calls.Count(c => c.IsCompletedSuccessfully), output.ServerCallsAnswered);
    }

    /// <summary>How a call may fail on hostile input: the server's error, a lost connection, a body
    /// it cannot read, a cancelled stream, a deadline.</summary>
    private static bool IsDesigned(Exception failure) =>
        failure is MuxRemoteException or MuxConnectionException or MessagePackSerializationException or OperationCanceledException or TimeoutException;

    private static Task[] StartCalls(MuxClient client)
    {
        IFuzzService service = client.CreateProxy<IFuzzService>();
        IFuzzStreams streams = client.CreateProxy<IFuzzStreams>();
        return
        [
            Start(() => service.Add(2, 3)),
            Start(() => service.Echo(new FuzzOrder { Id = new Guid("6f9619ff-8b86-d011-b42d-00c04fc964ff"), Lines = ["a"], Total = 1.5m })),
            Start(() => service.Count(new Dictionary<string, List<int>> { ["x"] = [1, 2] }, ["n", null])),
            Start(() => service.Shape(new FuzzSquare { Side = 2 })),
            Start(service.Nothing),
            Start(streams.Anything),
            Start(() => ConsumeAsync(streams.Shapes())),
            Start(() => ConsumeAsync(streams.Values())),
        ];
    }

    private static Task Start(Func<Task> call)
    {
        try
        {
            return call();
        }
        catch (Exception ex)
        {
            return Task.FromException(ex);
        }
    }

    private static async Task ConsumeAsync<T>(IAsyncEnumerable<T> items)
    {
        await foreach (T _ in items.ConfigureAwait(false))
        {
        }
    }

    /// <summary>Waits until <paramref name="done"/>, or until neither the client's output nor its
    /// calls have moved for <paramref name="quietTime"/>.</summary>
    private static async Task WaitUntilQuietAsync(Func<bool> done, ClientOutput output, Task[] calls, TimeSpan quietTime, CancellationToken patience)
    {
        long last = -1;
        long quietSince = Stopwatch.GetTimestamp();
        try
        {
            while (!done())
            {
                long now = output.Progress + calls.Count(c => c.IsCompleted);
                if (now != last)
                {
                    last = now;
                    quietSince = Stopwatch.GetTimestamp();
                }
                else if (Stopwatch.GetElapsedTime(quietSince) >= quietTime)
                {
                    return;
                }

                await Task.Delay(TimeSpan.FromMilliseconds(5), patience).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException) when (patience.IsCancellationRequested)
        {
            throw new TimeoutException($"The client never went quiet within {(Patience * 4).TotalSeconds} s.");
        }
    }

    /// <summary>Where the input's first frame (its HelloAck) ends; false, and the whole input, when
    /// the input ends inside it.</summary>
    private static bool TryFindFirstFrameEnd(byte[] input, out int end)
    {
        long announced = input.Length < 4 ? long.MaxValue : 4L + BinaryPrimitives.ReadUInt32LittleEndian(input);
        end = (int)Math.Min(announced, input.Length);
        return announced <= input.Length;
    }

    /// <summary>Gives the frames from <paramref name="start"/> that name a client call by its position
    /// (see <see cref="Calls"/>) that call's real id; stops at the first frame it cannot walk past.</summary>
    private static void MapCallIds(byte[] script, int start, uint[] callIds)
    {
        long position = start;
        while (position + ProtocolConstants.FrameHeaderSize <= script.Length)
        {
            int at = (int)position;
            uint length = BinaryPrimitives.ReadUInt32LittleEndian(script.AsSpan(at));
            if (length < ProtocolConstants.CommonHeaderSize)
            {
                return;
            }

            if ((script[at + 5] & (byte)FrameFlags.ServerInitiated) == 0)
            {
                uint callId = BinaryPrimitives.ReadUInt32LittleEndian(script.AsSpan(at + 6));
                if (callId >= 1 && callId <= callIds.Length && callIds[callId - 1] != 0)
                {
                    BinaryPrimitives.WriteUInt32LittleEndian(script.AsSpan(at + 6), callIds[callId - 1]);
                }
            }

            position += 4L + length;
        }
    }

    /// <summary>Reads what the client sends (it must always be well-formed frames): the ids of its
    /// Requests, and how many answers it gave the server's calls.</summary>
    private sealed class ClientOutput
    {
        // Written by the reading task, read by the driver; under the lock.
        private readonly Dictionary<uint, uint> _requests = [];
        private long _progress;
        private int _serverCallsAnswered;

        /// <summary>Moves each time the client sends anything.</summary>
        public long Progress => Volatile.Read(ref _progress);

        public int ServerCallsAnswered => Volatile.Read(ref _serverCallsAnswered);

        public int RequestsSeen(uint[] methodIds)
        {
            lock (_requests)
            {
                return methodIds.Count(_requests.ContainsKey);
            }
        }

        /// <summary>The call id of the client's Request to each method, 0 for one not seen.</summary>
        public uint[] CallIds(uint[] methodIds)
        {
            lock (_requests)
            {
                return methodIds.Select(m => _requests.GetValueOrDefault(m)).ToArray();
            }
        }

        public async Task ReadAsync(PipeReader reader)
        {
            try
            {
                while (true)
                {
                    ReadResult result = await reader.ReadAsync().ConfigureAwait(false);
                    ReadOnlySequence<byte> buffer = result.Buffer;
                    try
                    {
                        while (FrameReader.TryRead(ref buffer, int.MaxValue, out Frame frame))
                        {
                            Record(frame);
                        }
                    }
                    catch (MuxProtocolException ex)
                    {
                        throw new InvalidOperationException("The client sent a malformed frame.", ex);
                    }

                    reader.AdvanceTo(buffer.Start, buffer.End);
                    Interlocked.Increment(ref _progress);
                    if (result.IsCompleted || result.IsCanceled)
                    {
                        return;
                    }
                }
            }
            finally
            {
                await reader.CompleteAsync().ConfigureAwait(false);
            }
        }

        private void Record(in Frame frame)
        {
            bool serverCall = (frame.Flags & FrameFlags.ServerInitiated) != 0;
            if (frame.Type == FrameType.Request && !serverCall)
            {
                lock (_requests)
                {
                    _requests.TryAdd(frame.MethodId, frame.CallId);
                }
            }
            else if (frame.Type is FrameType.Response or FrameType.Error && serverCall)
            {
                Interlocked.Increment(ref _serverCallsAnswered);
            }
        }
    }

    /// <summary>The client's end of the two pipes.</summary>
    private sealed class Duplex(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
