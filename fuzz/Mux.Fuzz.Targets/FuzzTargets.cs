using System.Buffers;
using System.IO.Pipelines;
using Mux.Protocol;
using Mux.Transport;

namespace Mux.Fuzz;

/// <summary>
/// What the fuzzer drives, also replayed by tests/Mux.Tests over the corpus and every regression.
/// A target returns normally for any input Mux handles as designed (including rejecting it with a
/// protocol error); anything else, an unexpected exception or a hang, is a finding.
/// </summary>
public static class FuzzTargets
{
    /// <summary>How long the server target waits for the server to finish with one input.</summary>
    public static readonly TimeSpan ServerPatience = TimeSpan.FromSeconds(5);

    /// <summary>How long the server must stay silent before the client stops sending, when it has
    /// not yet answered every Request of the input (a cancelled call, say, may never be answered).</summary>
    private static readonly TimeSpan QuietTime = TimeSpan.FromMilliseconds(100);

    private static readonly Lazy<MuxServer> s_server = new(() =>
    {
        var server = new MuxServer(new MuxServerOptions { MaxFrameSize = 64 * 1024 });
        server.AddService<IFuzzService>(new FuzzService());
        server.StartWithoutListener();
        return server;
    });

    /// <summary>The frame reader, and the bodies it hands on that are read without a handler
    /// (handshake settings, error bodies). Rejections must be <see cref="MuxProtocolException"/>.</summary>
    public static void Frames(ReadOnlySpan<byte> data)
    {
        var buffer = new ReadOnlySequence<byte>(data.ToArray());
        try
        {
            while (FrameReader.TryRead(ref buffer, 64 * 1024, out Frame frame))
            {
                switch (frame.Type)
                {
                    case FrameType.Hello:
                    case FrameType.HelloAck:
                        HandshakeSettings.Parse(frame.Payload);
                        break;
                    case FrameType.Error:
                        ErrorBody.Read(frame.Payload.ToArray());
                        break;
                }
            }
        }
        catch (MuxProtocolException)
        {
            // The designed answer to a malformed frame: the connection closes with this error.
        }
    }

    /// <summary>
    /// The server's whole receive path (handshake, dispatch, argument decoding with the default
    /// UntrustedData options, Cancel/Ping/GoAway) over in-memory pipes: the input is what a client
    /// sends, then it stops sending. The server must finish with the connection (close its side)
    /// within <see cref="ServerPatience"/>; whatever it does must not escape as an exception.
    /// </summary>
    public static void Server(ReadOnlySpan<byte> data) => ServerAnswer(data);

    /// <summary>Runs <see cref="Server"/> and returns how many bytes the server sent back.</summary>
    public static long ServerAnswer(ReadOnlySpan<byte> data) => RunServerAsync(data.ToArray()).GetAwaiter().GetResult();

    /// <summary>The Requests the server will read from the input: those before its first
    /// malformed frame, if the input starts with a Hello.</summary>
    private static int CountRequests(byte[] input)
    {
        var buffer = new ReadOnlySequence<byte>(input);
        int requests = 0;
        try
        {
            bool first = true;
            while (FrameReader.TryRead(ref buffer, 64 * 1024, out Frame frame))
            {
                if (first && frame.Type != FrameType.Hello)
                {
                    return 0;
                }

                first = false;
                requests += frame.Type == FrameType.Request ? 1 : 0;
            }
        }
        catch (MuxProtocolException)
        {
        }

        return requests;
    }

    /// <summary>Consumes the whole frames the server sent and counts its answers to calls.</summary>
    private static int CountAnswers(ref ReadOnlySequence<byte> buffer)
    {
        int answers = 0;
        try
        {
            while (FrameReader.TryRead(ref buffer, int.MaxValue, out Frame frame))
            {
                answers += frame.Type is FrameType.Response or FrameType.Error && frame.CallId != 0 ? 1 : 0;
            }
        }
        catch (MuxProtocolException ex)
        {
            throw new InvalidOperationException("The server sent a malformed frame.", ex);
        }

        return answers;
    }

    private static async Task<long> RunServerAsync(byte[] input)
    {
        (DuplexPipeTransport client, DuplexPipeTransport server) = DuplexPipeTransport.CreatePair();
        s_server.Value.Accept(server, "fuzz");

        await client.Output.WriteAsync(input).ConfigureAwait(false);

        // Drain what the server answers. The client keeps its side open until every Request in the
        // input is answered (or the server has been quiet for QuietTime), so handlers run, decode
        // their arguments and answer before the client stops sending; then it closes its side too.
        // A server that neither answers nor closes within ServerPatience has hung on this input.
        using var patience = new CancellationTokenSource(ServerPatience);
        int requests = CountRequests(input);
        int answers = 0;
        long answered = 0;
        bool sending = true;
        try
        {
            while (true)
            {
                if (sending && answers >= requests)
                {
                    sending = false;
                    await client.Output.CompleteAsync().ConfigureAwait(false);
                }

                ValueTask<ReadResult> read = client.Input.ReadAsync(patience.Token);
                if (sending && !read.IsCompleted)
                {
                    Task<ReadResult> pending = read.AsTask();
                    if (await Task.WhenAny(pending, Task.Delay(QuietTime, patience.Token)).ConfigureAwait(false) != pending)
                    {
                        sending = false;
                        await client.Output.CompleteAsync().ConfigureAwait(false);
                    }

                    read = new ValueTask<ReadResult>(pending);
                }

                ReadResult result = await read.ConfigureAwait(false);
                ReadOnlySequence<byte> buffer = result.Buffer;
                answered += buffer.Length;
                answers += CountAnswers(ref buffer);
                client.Input.AdvanceTo(buffer.Start, buffer.End);
                if (result.IsCompleted || result.IsCanceled)
                {
                    return answered;
                }
            }
        }
        catch (OperationCanceledException) when (patience.IsCancellationRequested)
        {
            throw new TimeoutException($"The server neither answered nor closed within {ServerPatience.TotalSeconds} s after the client stopped sending ({input.Length} bytes of input).");
        }
        finally
        {
            if (sending)
            {
                await client.Output.CompleteAsync().ConfigureAwait(false);
            }

            await client.Input.CompleteAsync().ConfigureAwait(false);
        }
    }
}
