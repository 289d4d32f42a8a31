using MessagePack;
using MessagePack.Formatters;
using MessagePack.Resolvers;

namespace Mux.Serialization;

/// <summary>
/// Generated formatters first, since they need no run-time code generation (Native AOT) and write exactly what
/// MessagePack's dynamic ones write; then the user's resolver. MessagePack's formatters of bytes are replaced by
/// <see cref="BinaryInPieces"/>, so a large message is encoded into pooled segments rather than one large array.
/// </summary>

internal sealed class MuxResolver : IFormatterResolver
{
    /// <summary>Generated formatters, then <see cref="StandardResolver"/>.</summary>
    public static readonly MuxResolver Default = new(StandardResolver.Instance);

    static MuxResolver()
    {
        MuxFormatters.Register(VoidResultFormatter.Instance);
    }

    private MuxResolver(IFormatterResolver fallback)
    {
        Fallback = fallback;
    }

    /// <summary>The user's resolver, asked for every type without a generated formatter.</summary>
    public IFormatterResolver Fallback { get; }

    public IMessagePackFormatter<T>? GetFormatter<T>() =>
        GeneratedFormatter<T>.Instance
        ?? (ReferenceEquals(this, Default) ? StandardFormatter<T>.Instance : BinaryInPieces.Replace(Fallback.GetFormatter<T>()));


    // StandardResolver's formatter of T, read once: a string member of a [MessagePackObject] type is
    // looked up on every call, and this saves that lookup a second generic virtual call.
    private static class StandardFormatter<T>
    {
        public static readonly IMessagePackFormatter<T>? Instance = BinaryInPieces.Replace(StandardResolver.Instance.GetFormatter<T>());
    }

    /// <summary>Puts generated formatters in front of <paramref name="resolver"/> (once: a resolver that
    /// already is a <see cref="MuxResolver"/> is returned as it is).</summary>
    public static MuxResolver Wrap(IFormatterResolver resolver) => resolver switch
    {
        MuxResolver mux => mux,
        StandardResolver => Default,
        _ => new MuxResolver(resolver),
    };
}
