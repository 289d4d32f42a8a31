using System.Collections.Generic;

namespace Mux.Generators;

/// <summary>
/// How a generated formatter writes and reads the values it holds (arguments or members).
/// </summary>
/// <remarks>
/// The primitives MessagePack-CSharp's own object formatters write directly
/// (DynamicObjectTypeBuilder.IsOptimizeTargetType) are written directly here too: resolvers may
/// not change how they are written, so the bytes are the same and no formatter is looked up.
/// Every other type is written by the formatter of the options' resolver. Asking the resolver is
/// a generic virtual call, so instead of asking once per value, the generated formatter keeps the
/// formatters it got in a <c>MemberFormatters</c> object tied to the resolver that gave them, and
/// asks again only when a call brings a different resolver (one per connection's options; in
/// practice the same one for every call).
/// </remarks>
internal sealed class MemberFormatters
{
    private const string Resolver = "global::MessagePack.IFormatterResolver";

    private static readonly Dictionary<string, string> s_directReads = new()
    {
        ["short"] = "ReadInt16",
        ["int"] = "ReadInt32",
        ["long"] = "ReadInt64",
        ["ushort"] = "ReadUInt16",
        ["uint"] = "ReadUInt32",
        ["ulong"] = "ReadUInt64",
        ["float"] = "ReadSingle",
        ["double"] = "ReadDouble",
        ["bool"] = "ReadBoolean",
        ["byte"] = "ReadByte",
        ["sbyte"] = "ReadSByte",
        ["char"] = "ReadChar",
    };

    private readonly Dictionary<string, string> _fields = new();
    private readonly List<string> _types = new();

    /// <param name="types">The (annotated) types of the values the formatter writes.</param>
    public MemberFormatters(IEnumerable<string> types)
    {
        foreach (string type in types)
        {
            if (!s_directReads.ContainsKey(type) && !_fields.ContainsKey(type))
            {
                _fields.Add(type, "F" + _types.Count);
                _types.Add(type);
            }
        }
    }

    /// <summary>Whether any value needs a formatter from the resolver.</summary>
    public bool Any => _types.Count > 0;

    /// <summary>The class that holds the formatters, the field for the last one, and its getter.</summary>
    public void EmitCache(CodeWriter w, string formatterOf)
    {
        if (!Any)
        {
            return;
        }

        w.Line("/// <summary>The formatters of the values, as one resolver gave them.</summary>");
        w.Open("private sealed class MemberFormatters");
        w.Line($"public readonly {Resolver} Resolver;");
        for (int i = 0; i < _types.Count; i++)
        {
            w.Line($"public readonly {formatterOf}<{_types[i]}> F{i};");
        }

        w.Line();
        w.Open($"public MemberFormatters({Resolver} resolver)");
        w.Line("Resolver = resolver;");
        for (int i = 0; i < _types.Count; i++)
        {
            w.Line($"F{i} = global::MessagePack.FormatterResolverExtensions.GetFormatterWithVerify<{_types[i]}>(resolver);");
        }

        w.Close();
        w.Close();
        w.Line();
        w.Line("private MemberFormatters? _formatters;");
        w.Line();
        w.Line("// A race replaces the object with an equal one: each is immutable and complete.");
        w.Open("private MemberFormatters FormattersFor(global::MessagePack.MessagePackSerializerOptions options)");
        w.Line("MemberFormatters? formatters = _formatters;");
        w.Open("if (formatters is null || !ReferenceEquals(formatters.Resolver, options.Resolver))");
        w.Line("_formatters = formatters = new MemberFormatters(options.Resolver);");
        w.Close();
        w.Line();
        w.Line("return formatters;");
        w.Close();
        w.Line();
    }

    /// <summary>The statement at the top of Serialize or Deserialize that fetches the formatters.</summary>
    public void EmitFetch(CodeWriter w)
    {
        if (Any)
        {
            w.Line("MemberFormatters formatters = FormattersFor(options);");
        }
    }

    /// <summary>The statement that writes <paramref name="value"/> of <paramref name="type"/>.</summary>
    public string Write(string type, string value) =>
        s_directReads.ContainsKey(type)
            ? $"writer.Write({value});"
            : $"formatters.{_fields[type]}.Serialize(ref writer, {value}, options);";

    /// <summary>The expression that reads a value of <paramref name="type"/>.</summary>
    public string Read(string type) =>
        s_directReads.TryGetValue(type, out string? read)
            ? $"reader.{read}()"
            : $"formatters.{_fields[type]}.Deserialize(ref reader, options)";
}
