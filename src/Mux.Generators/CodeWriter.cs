using System.Text;

namespace Mux.Generators;

/// <summary>Builds generated source line by line with four-space indentation.</summary>
internal sealed class CodeWriter
{
    private readonly StringBuilder _builder = new();
    private int _indent;

    public void Line(string text = "")
    {
        if (text.Length > 0)
        {
            _builder.Append(' ', _indent * 4).Append(text);
        }

        _builder.Append('\n');
    }

    public void Open(string text)
    {
        Line(text);
        Line("{");
        _indent++;
    }

    public void Close()
    {
        _indent--;
        Line("}");
    }

    public override string ToString() => _builder.ToString();
}
