using System.Diagnostics.CodeAnalysis;

namespace Mux.Serialization;

/// <summary>
/// Where formatters are found. Built-in formatters exist for <see cref="bool"/>, <see cref="byte"/>,
/// <see cref="sbyte"/>, <see cref="short"/>, <see cref="ushort"/>, <see cref="int"/>, <see cref="uint"/>,
/// <see cref="long"/>, <see cref="ulong"/>, <see cref="float"/>, <see cref="double"/>, <see cref="char"/>,
/// <see cref="string"/>, <c>byte[]</c>, <see cref="DateTime"/>, <see cref="DateTimeOffset"/>,
/// <see cref="TimeSpan"/>, <see cref="Guid"/>, <see cref="decimal"/>, and the nullable form of
/// each of those value types. Every other type needs a registered formatter.
/// </summary>
public static class MuxFormatterResolver
{
    /// <summary>Registers the formatter for <typeparamref name="T"/>, replacing any earlier one.</summary>
    /// <typeparam name="T">The type the formatter handles.</typeparam>
    /// <param name="formatter">The formatter to use from now on.</param>
    /// <exception cref="ArgumentNullException"><paramref name="formatter"/> is <see langword="null"/>.</exception>
    public static void Register<T>(IMuxFormatter<T> formatter)
    {
        ArgumentNullException.ThrowIfNull(formatter);
        FormatterCache<T>.Formatter = formatter;
    }

    /// <summary>
    /// Registers the formatter for <typeparamref name="T"/> only if none is registered yet, so that
    /// generated registrations never override one made explicitly (or a built-in one).
    /// </summary>
    /// <typeparam name="T">The type the formatter handles.</typeparam>
    /// <param name="formatter">The formatter to use if there is none yet.</param>
    /// <returns><see langword="true"/> if <paramref name="formatter"/> was registered; otherwise <see langword="false"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="formatter"/> is <see langword="null"/>.</exception>
    public static bool TryRegister<T>(IMuxFormatter<T> formatter)
    {
        ArgumentNullException.ThrowIfNull(formatter);
        return Interlocked.CompareExchange(ref FormatterCache<T>.Formatter, formatter, null) is null;
    }

    /// <summary>Gets the formatter for <typeparamref name="T"/>.</summary>
    /// <typeparam name="T">The type to format.</typeparam>
    /// <returns>The registered or built-in formatter.</returns>
    /// <exception cref="MuxSerializationException">No formatter is registered for <typeparamref name="T"/>.</exception>
    public static IMuxFormatter<T> GetFormatter<T>() => FormatterCache<T>.Formatter ?? ThrowNoFormatter<T>();

    [DoesNotReturn]
    private static IMuxFormatter<T> ThrowNoFormatter<T>()
    {
        string name = typeof(T).FullName ?? typeof(T).Name;
        throw new MuxSerializationException(
            $"No MessagePack formatter is registered for type '{name}'. Mark the type with [MuxObject] so Mux generates one, " +
            $"or call MuxFormatterResolver.Register<{name}>(...) at startup.");
    }
}
