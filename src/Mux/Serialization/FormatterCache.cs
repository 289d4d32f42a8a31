namespace Mux.Serialization;

/// <summary>
/// Holds the formatter for <typeparamref name="T"/> in a static field, so looking it up is one
/// field read: no dictionary, no lock. Starts out with the built-in formatter, if there is one.
/// </summary>
internal static class FormatterCache<T>
{
    // Volatile so a formatter registered on one thread is seen fully constructed on the others.
    internal static volatile IMuxFormatter<T>? Formatter = BuiltinFormatters.Get<T>();
}
