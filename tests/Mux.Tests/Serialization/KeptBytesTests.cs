using System.Buffers;
using System.Collections.Concurrent;
using Mux.Tests.Fragments;
using Mux.Tests.Infrastructure;

namespace Mux.Tests.Serialization;

/// <summary>
/// A bytes value read from a message (a handler's argument, a caller's result) is the reader's
/// own: it stays as it arrived after the call, while the buffers the message came in (a pooled
/// call's kept array, a rented array, pooled segments of a message in fragments) carry the next
/// calls' messages.
/// </summary>
public sealed class KeptBytesTests
{
    public static TheoryData<string, int> Cases()
    {
        var cases = new TheoryData<string, int>();
        foreach (string type in new[] { "byte[]", "ReadOnlyMemory<byte>", "Memory<byte>", "ArraySegment<byte>", "ReadOnlySequence<byte>" })
        {
            foreach (int size in new[] { 100, 5_000, 40_000, 300_000 })
            {
                cases.Add(type, size);
            }
        }

        return cases;
    }

    [Theory]
    [MemberData(nameof(Cases))]
    public async Task BytesKeptAfterTheirCall_AreNotOverwrittenByTheNextCalls(string type, int size)
    {
        var service = new KeepingBytesService();
        await using var server = new MuxServer(new MuxServerOptions());
        server.AddService<IBytesService>(service);
        await using MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        IBytesService proxy = client.CreateProxy<IBytesService>();
        byte[] first = Enumerable.Repeat((byte)0x11, size).ToArray();

        object result = await BytesEcho.EchoAsync(proxy, type, first).WaitAsync(TestHost.Patience);
        for (int i = 0; i < 4; i++)
        {
            await BytesEcho.EchoAsync(proxy, type, Enumerable.Repeat((byte)(0x22 + i), size).ToArray()).WaitAsync(TestHost.Patience);
        }

        Assert.Equal(first, BytesEcho.Bytes(result));
        Assert.Equal(first, BytesEcho.Bytes(service.Kept.First()));
    }

    /// <summary>Echoes every argument, and keeps each one as it received it.</summary>
    private sealed class KeepingBytesService : IBytesService
    {
        public ConcurrentQueue<object> Kept { get; } = new();

        public Task<byte[]> EchoArray(byte[] data) => Keep(data);

        public Task<ReadOnlyMemory<byte>> EchoReadOnlyMemory(ReadOnlyMemory<byte> data) => Keep(data);

        public Task<Memory<byte>> EchoMemory(Memory<byte> data) => Keep(data);

        public Task<ArraySegment<byte>> EchoArraySegment(ArraySegment<byte> data) => Keep(data);

        public Task<ReadOnlySequence<byte>> EchoSequence(ReadOnlySequence<byte> data) => Keep(data);

        public Task<string> EchoText(string text) => Keep(text);

        private Task<T> Keep<T>(T value)
        {
            Kept.Enqueue(value!);
            return Task.FromResult(value);
        }
    }
}
