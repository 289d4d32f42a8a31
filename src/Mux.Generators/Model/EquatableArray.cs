using System;
using System.Collections;
using System.Collections.Generic;
using System.Linq;

namespace Mux.Generators.Model;

/// <summary>
/// An immutable array compared by its elements, so that models holding one stay equal across
/// generator runs and the incremental pipeline can skip unchanged work.
/// </summary>
/// <typeparam name="T">The element type; must compare by value itself.</typeparam>
internal readonly struct EquatableArray<T> : IEquatable<EquatableArray<T>>, IReadOnlyList<T>
    where T : IEquatable<T>
{
    private readonly T[]? _items;

    public EquatableArray(T[] items)
    {
        _items = items;
    }

    public EquatableArray(IEnumerable<T> items)
    {
        _items = items.ToArray();
    }

    public static EquatableArray<T> Empty => new([]);

    public int Count => _items?.Length ?? 0;

    public T this[int index] => _items![index];

    public bool Equals(EquatableArray<T> other)
    {
        T[] mine = _items ?? [];
        T[] theirs = other._items ?? [];
        return mine.AsSpan().SequenceEqual(theirs.AsSpan());
    }

    public override bool Equals(object? obj) => obj is EquatableArray<T> other && Equals(other);

    public override int GetHashCode()
    {
        int hash = 17;
        foreach (T item in _items ?? [])
        {
            hash = unchecked((hash * 31) + (item?.GetHashCode() ?? 0));
        }

        return hash;
    }

    public IEnumerator<T> GetEnumerator() => ((IEnumerable<T>)(_items ?? [])).GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    public static bool operator ==(EquatableArray<T> left, EquatableArray<T> right) => left.Equals(right);

    public static bool operator !=(EquatableArray<T> left, EquatableArray<T> right) => !left.Equals(right);
}
