namespace Mux.Streaming;

/// <summary>One received stream item's MessagePack bytes, copied out of the receive buffer into
/// an array rented from the shared pool: the first <see cref="Length"/> bytes of <see cref="Array"/>.</summary>
internal readonly record struct StreamItemBuffer(byte[] Array, int Length);
