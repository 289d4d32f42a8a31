using System.Buffers.Binary;
using Mux.Protocol;

namespace Mux.Tests.Fuzz;

/// <summary>What a fuzzer does to a client seed, in a form a test can repeat from a fixed random
/// seed: each mutation leaves the seed's HelloAck whole (so the client connects and its calls are
/// in flight) and changes what follows.</summary>
internal static class ClientMutations
{
    private static readonly byte[] s_edgeBytes = [0x00, 0x01, 0x7f, 0x80, 0xc0, 0xc1, 0xc2, 0xc3, 0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xff];

    // Where a server's bytes reach the client's deserializer as an object (which nests as deep as
    // the bytes do): the result of Anything and the items of Values (call ids 6 and 8 name those
    // calls of the client), and the value argument of the server's own call to Take.
    private const uint AnythingCall = 6;
    private const uint ValuesCall = 8;
    private static readonly uint s_take = MuxMethodId.Compute("Mux.Fuzz.IFuzzClientSide.Take");

    public static (string Mutation, byte[] Input) Mutate(byte[] seed, Random random)
    {
        int ackEnd = 4 + (int)BinaryPrimitives.ReadUInt32LittleEndian(seed);
        byte[] input = (byte[])seed.Clone();
        int tail = input.Length - ackEnd;
        List<int> starts = FrameStarts(input, ackEnd);
        int choice = tail == 0 ? 5 : random.Next(8);
        switch (choice >= 6 && starts.Count == 0 ? 0 : choice)
        {
            case 6:
            {
                // Another frame type, or other flag bits, on one whole frame: a Response sent as a
                // StreamItem, a Request without ServerInitiated, a Continuation out of nowhere.
                int frame = starts[random.Next(starts.Count)];
                bool type = random.Next(2) == 0;
                input[frame + (type ? 4 : 5)] = (byte)(type ? random.Next(1, 16) : 1 << random.Next(5));
                return ($"frame at {frame} given {(type ? "type" : "flags")} {input[frame + (type ? 4 : 5)]}", input);
            }

            case 0:
                for (int i = random.Next(1, 4); i > 0; i--)
                {
                    int at = ackEnd + random.Next(tail);
                    input[at] ^= (byte)(1 << random.Next(8));
                }

                return ("bits flipped", input);
            case 1:
            {
                int at = ackEnd + random.Next(tail);
                input[at] = s_edgeBytes[random.Next(s_edgeBytes.Length)];
                return ($"byte {at} set to 0x{input[at]:x2}", input);
            }

            case 2:
            {
                int at = ackEnd + random.Next(tail);
                return ($"cut at {at}", input[..at]);
            }

            case 3:
            {
                int from = ackEnd + random.Next(tail);
                int length = random.Next(1, Math.Min(64, input.Length - from) + 1);
                int at = ackEnd + random.Next(tail + 1);
                return ($"bytes {from}..{from + length} repeated at {at}", [.. input[..at], .. input.AsSpan(from, length), .. input[at..]]);
            }

            case 7:
            {
                // One whole frame sent twice: an answer or an item for a call already ended.
                int index = random.Next(starts.Count);
                int from = starts[index];
                int to = index + 1 < starts.Count ? starts[index + 1] : input.Length;
                return ($"frame at {from} sent twice", [.. input[..to], .. input[from..to], .. input[to..]]);
            }

            case 4:
            {
                int at = ackEnd + random.Next(tail + 1);
                return ($"an array of 2^32-1 announced at {at}", [.. input[..at], 0xdd, 0xff, 0xff, 0xff, 0xff, .. input[at..]]);
            }

            default:
            {
                byte[] deep = [.. Enumerable.Repeat((byte)0x91, 200_000), 0xc0];
                int where = random.Next(3);
                byte[] frame = where switch
                {
                    0 => Frame(FrameType.Response, AnythingCall, FrameFlags.None, deep),
                    1 => Frame(FrameType.StreamItem, ValuesCall, FrameFlags.None, deep),
                    _ => Frame(FrameType.Request, 9, FrameFlags.ServerInitiated, [.. MethodId(s_take), 0x93, 0xc0, .. deep, 0xc0]),
                };
                string place = where switch { 0 => "a result", 1 => "a stream item", _ => "the arguments of a server's call" };
                return ($"{place} nested 200,000 levels deep after the HelloAck", [.. input[..ackEnd], .. frame, .. input[ackEnd..]]);
            }
        }
    }

    /// <summary>Where each frame from <paramref name="start"/> on begins, as far as whole headers go.</summary>
    private static List<int> FrameStarts(byte[] input, int start)
    {
        var starts = new List<int>();
        long position = start;
        while (position + ProtocolConstants.FrameHeaderSize <= input.Length)
        {
            starts.Add((int)position);
            position += 4L + BinaryPrimitives.ReadUInt32LittleEndian(input.AsSpan((int)position));
        }

        return starts;
    }

    private static byte[] MethodId(uint id)
    {
        byte[] bytes = new byte[4];
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, id);
        return bytes;
    }

    private static byte[] Frame(FrameType type, uint callId, FrameFlags flags, byte[] body)
    {
        var output = new System.Buffers.ArrayBufferWriter<byte>();
        FrameWriter.WriteRaw(output, type, callId, body, flags);
        return output.WrittenSpan.ToArray();
    }
}
