using System.Buffers;
using Mux.Serialization;

namespace Mux.Tests.Serialization;

internal delegate void WriteAction(ref MessagePackWriter writer);

internal static class MessagePackTestHelpers
{
    public static byte[] Encode(WriteAction write)
    {
        var output = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(output);
        write(ref writer);
        Assert.Equal(output.WrittenCount, writer.BytesWritten);
        return output.WrittenSpan.ToArray();
    }

    public static byte[] Serialize<T>(T value) => Serialize(MuxFormatterResolver.GetFormatter<T>(), value);

    public static byte[] Serialize<T>(IMuxFormatter<T> formatter, T value)
    {
        var output = new ArrayBufferWriter<byte>();
        var writer = new MessagePackWriter(output);
        formatter.Serialize(ref writer, value);
        return output.WrittenSpan.ToArray();
    }

    public static T Deserialize<T>(byte[] data) => Deserialize(MuxFormatterResolver.GetFormatter<T>(), data);

    /// <summary>Deserializes and checks that exactly the whole input was consumed.</summary>
    public static T Deserialize<T>(IMuxFormatter<T> formatter, byte[] data)
    {
        var reader = new MessagePackReader(data);
        T value = formatter.Deserialize(ref reader);
        Assert.True(reader.End);
        Assert.Equal(data.Length, reader.Consumed);
        return value;
    }

    public static T RoundTrip<T>(T value) => Deserialize<T>(Serialize(value));

    public static T RoundTrip<T>(IMuxFormatter<T> formatter, T value) => Deserialize(formatter, Serialize(formatter, value));

    public static byte[] Hex(string hex) => Convert.FromHexString(hex.Replace(" ", string.Empty, StringComparison.Ordinal));

    /// <summary>
    /// Reads every strict prefix of <paramref name="data"/> with <paramref name="read"/> and checks
    /// that each one fails with <see cref="MuxSerializationException"/>, never another exception.
    /// </summary>
    public static void AssertEveryTruncationThrows(byte[] data, ReadAction read)
    {
        for (int cut = 0; cut < data.Length; cut++)
        {
            byte[] prefix = data[..cut];
            Exception? caught = null;
            try
            {
                var reader = new MessagePackReader(prefix);
                read(ref reader);
            }
            catch (Exception ex)
            {
                caught = ex;
            }

            Assert.True(caught is MuxSerializationException, $"Cut at {cut} of {data.Length}: expected MuxSerializationException but got {caught?.GetType().Name ?? "no exception"}: {caught?.Message}");
        }
    }
}

internal delegate void ReadAction(ref MessagePackReader reader);
