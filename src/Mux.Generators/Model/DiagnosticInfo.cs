using System.Linq;
using Microsoft.CodeAnalysis;
using Microsoft.CodeAnalysis.Text;

namespace Mux.Generators.Model;

/// <summary>Where a diagnostic points, kept as plain values (a <see cref="Location"/> would hold
/// on to a syntax tree and defeat the incremental pipeline's caching).</summary>
internal sealed record LocationInfo(string FilePath, TextSpan Span, LinePositionSpan LineSpan)
{
    /// <summary>The location in the compilation's syntax tree, so that #pragma and the IDE see it.</summary>
    public Location ToLocation(Compilation compilation)
    {
        foreach (SyntaxTree tree in compilation.SyntaxTrees)
        {
            if (tree.FilePath == FilePath)
            {
                return Location.Create(tree, Span);
            }
        }

        return Location.Create(FilePath, Span, LineSpan);
    }

    public static LocationInfo? From(Location? location)
    {
        if (location is null || !location.IsInSource || location.SourceTree is null)
        {
            return null;
        }

        return new LocationInfo(location.SourceTree.FilePath, location.SourceSpan, location.GetLineSpan().Span);
    }
}

/// <summary>A diagnostic to report, as values.</summary>
internal sealed record DiagnosticInfo(DiagnosticDescriptor Descriptor, LocationInfo? Location, EquatableArray<string> MessageArguments)
{
    public static DiagnosticInfo Create(DiagnosticDescriptor descriptor, Location? location, params string[] messageArguments) =>
        new(descriptor, LocationInfo.From(location), new EquatableArray<string>(messageArguments));

    public Diagnostic ToDiagnostic(Compilation compilation) =>
        Diagnostic.Create(Descriptor, Location?.ToLocation(compilation) ?? Microsoft.CodeAnalysis.Location.None, MessageArguments.Cast<object>().ToArray());

    public bool Equals(DiagnosticInfo? other) =>
        other is not null
        && ReferenceEquals(Descriptor, other.Descriptor)
        && Equals(Location, other.Location)
        && MessageArguments.Equals(other.MessageArguments);

    public override int GetHashCode() => HashCode(Descriptor.Id.GetHashCode(), Location?.GetHashCode() ?? 0, MessageArguments.GetHashCode());

    private static int HashCode(int a, int b, int c) => unchecked((((a * 31) + b) * 31) + c);
}
