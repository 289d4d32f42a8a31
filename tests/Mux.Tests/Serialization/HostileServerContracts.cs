using MessagePack;
using Mux.Tests.Generated;

namespace Mux.Tests.Serialization;

/// <summary>A recursive type whose nesting is a list: a tree, each level one more array deep.</summary>
[MessagePackObject]
public sealed class Tree
{
    [Key(0)]
    public List<Tree?>? Children { get; set; }
}

/// <summary>What a client calls on a server that may be hostile: results and stream items of
/// recursive types, which a server can nest as deep as its frame allows.</summary>
[MuxService]
public interface IDeepAnswers
{
    Task<Node?> GetNode();

    Task<object?> GetObject();

    Task<Tree?> GetTree();

    IAsyncEnumerable<Node?> Nodes();

    IAsyncEnumerable<object?> Objects();

    IAsyncEnumerable<Tree?> Trees();

    /// <summary>A well-formed call after a hostile one, to show the connection still works.</summary>
    Task<int> Count();
}

/// <summary>What a client serves to a server that may be hostile: arguments of recursive types.</summary>
[MuxService]
public interface IDeepArguments
{
    Task<int> TakeNode(Node? node);

    Task<int> TakeObject(object? value);

    Task<int> TakeTree(Tree? tree);
}

/// <summary>Counts the levels of what it is given.</summary>
public sealed class DeepArguments : IDeepArguments
{
    public Task<int> TakeNode(Node? node)
    {
        int depth = 0;
        for (; node is not null; node = node.Child)
        {
            depth++;
        }

        return Task.FromResult(depth);
    }

    public Task<int> TakeObject(object? value)
    {
        int depth = 0;
        for (; value is object?[] { Length: > 0 } array; value = array[0])
        {
            depth++;
        }

        return Task.FromResult(depth);
    }

    public Task<int> TakeTree(Tree? tree)
    {
        int depth = 0;
        for (; tree is not null; tree = tree.Children is [var first, ..] ? first : null)
        {
            depth++;
        }

        return Task.FromResult(depth);
    }
}
