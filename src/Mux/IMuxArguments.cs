using Mux.Serialization;

namespace Mux;

/// <summary>
/// The arguments of one call, written as a MessagePack array. Proxies implement it with a
/// <see langword="struct"/> per method so that <see cref="MuxClient.InvokeAsync{TArguments, TResult}"/>
/// serializes them without boxing. Not meant to be implemented by hand outside of proxies.
/// </summary>
public interface IMuxArguments
{
    /// <summary>Writes the arguments as one MessagePack array.</summary>
    /// <param name="writer">Where to write them.</param>
    void Write(ref MessagePackWriter writer);
}
