namespace Mux.Diagnostics;

/// <summary>
/// Bytes of large messages Mux copied in user space, by copy point, for the load runner. Counted at most once per
/// fragment or large binary, never per small call.
/// </summary>

internal static class PayloadCopies
{
    // Process-wide totals, Interlocked: whoever copies adds.
    private static long s_serialized;
    private static long s_written;
    private static long s_reassembled;
    private static long s_deserialized;
    private static long s_taken;

    /// <summary>Bytes of binaries a serializer copied into a message's buffer (not spliced).</summary>
    public static long SerializedBytes => Interlocked.Read(ref s_serialized);

    /// <summary>Bytes of messages in fragments the writer copied into the connection's output.</summary>
    public static long WrittenBytes => Interlocked.Read(ref s_written);

    /// <summary>Bytes of messages in fragments the reader copied out of the receive buffer (segments or landed arrays).</summary>
    public static long ReassembledBytes => Interlocked.Read(ref s_reassembled);

    /// <summary>Bytes of large binaries a formatter copied out of a received message (not landed).</summary>
    public static long DeserializedBytes => Interlocked.Read(ref s_deserialized);

    /// <summary>Bytes of received messages copied whole into an array instead of taken over from the reader.</summary>
    public static long TakenBytes => Interlocked.Read(ref s_taken);

    public static void Serialized(long bytes) => Interlocked.Add(ref s_serialized, bytes);

    public static void Written(long bytes) => Interlocked.Add(ref s_written, bytes);

    public static void Reassembled(long bytes) => Interlocked.Add(ref s_reassembled, bytes);

    public static void Deserialized(long bytes) => Interlocked.Add(ref s_deserialized, bytes);

    public static void Taken(long bytes) => Interlocked.Add(ref s_taken, bytes);
}
