using System.ComponentModel;
using MessagePack.Formatters;

namespace Mux.Serialization;

/// <summary>
/// Where generated module initializers register the formatters the Mux generator emits. Every Mux connection consults
/// them before the configured <c>SerializerOptions.Resolver</c>, so contract types never need MessagePack's run-time code
/// generation, which Native AOT cannot do.
/// </summary>
/// <remarks>Applications do not call it: put formatters of your own in the resolver of
/// <see cref="MuxConnectionOptions.SerializerOptions"/> on both sides.</remarks>

[EditorBrowsable(EditorBrowsableState.Never)]
public static class MuxFormatters
{
    /// <summary>Registers the formatter for <typeparamref name="T"/> unless one is registered already.</summary>
    /// <typeparam name="T">The type the formatter handles.</typeparam>
    /// <param name="formatter">The formatter.</param>
    /// <returns><see langword="true"/> if <paramref name="formatter"/> was registered; <see langword="false"/>
    /// if an earlier registration (another assembly's generated code, say) stays in place.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="formatter"/> is <see langword="null"/>.</exception>
    public static bool Register<T>(IMessagePackFormatter<T> formatter)
    {
        ArgumentNullException.ThrowIfNull(formatter);
        return Interlocked.CompareExchange(ref GeneratedFormatter<T>.Instance, formatter, null) is null;
    }
}

/// <summary>The generated formatter for <typeparamref name="T"/>, if any: one static field read per lookup,
/// no dictionary and no lock on the call path.</summary>
internal static class GeneratedFormatter<T>
{
    // Written once by MuxFormatters.Register (CompareExchange), read by MuxResolver on every call.
    internal static IMessagePackFormatter<T>? Instance;
}
