using System.Collections;
using System.Diagnostics.CodeAnalysis;
using Mux.Protocol;

namespace Mux.Connection;

/// <summary>
/// The metadata a caller sends with a call (<see cref="MuxCallOptions.Metadata"/>, <see cref="MuxClientCall.Metadata"/>): a dictionary
/// whose keys are compared case-insensitively and checked as they are set (printable ASCII, not reserved for Mux, see
/// <see cref="MetadataSection.DescribeInvalidKey"/>), so a bad key fails where it is written rather than when a call is sent. Not
/// thread-safe, like <see cref="Dictionary{TKey, TValue}"/>: each options object or call has its own.
/// </summary>
internal sealed class CallMetadata : IDictionary<string, string>
{
    private static readonly Dictionary<string, string> s_empty = new(StringComparer.OrdinalIgnoreCase);

    // The entries, keyed case-insensitively; made on the first write, so that a call whose interceptors add nothing allocates no
    // dictionary. Touched by the owner of the options or call.
    private Dictionary<string, string>? _entries;

    public CallMetadata()
    {
    }

    /// <summary>A copy of <paramref name="entries"/>, whose keys were checked already; not <see cref="IsModified"/>.</summary>
    public CallMetadata(KeyValuePair<string, string>[] entries)
    {
        if (entries.Length != 0)
        {
            _entries = new Dictionary<string, string>(entries, StringComparer.OrdinalIgnoreCase);
        }
    }

    /// <summary>Whether anything was written since this object was made (an interceptor changed the metadata it started from, so it must be
    /// encoded again).</summary>
    public bool IsModified { get; private set; }

    // What readers read: the entries, or an empty dictionary before the first write.
    private Dictionary<string, string> Entries => _entries ?? s_empty;

    // What writers write: the entries, made on first use.
    private Dictionary<string, string> Writable
    {
        get
        {
            IsModified = true;
            return _entries ??= new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        }
    }

    public string this[string key]
    {
        get => Entries[key];
        set => Writable[Check(key)] = CheckValue(key, value);
    }

    public ICollection<string> Keys => Entries.Keys;

    public ICollection<string> Values => Entries.Values;

    public int Count => _entries?.Count ?? 0;

    public bool IsReadOnly => false;

    public void Add(string key, string value) => Writable.Add(Check(key), CheckValue(key, value));

    public void Add(KeyValuePair<string, string> item) => Add(item.Key, item.Value);

    public void Clear()
    {
        if (_entries is not null)
        {
            Writable.Clear();
        }
    }

    public bool Contains(KeyValuePair<string, string> item) => ((IDictionary<string, string>)Entries).Contains(item);

    public bool ContainsKey(string key) => Entries.ContainsKey(key);

    public void CopyTo(KeyValuePair<string, string>[] array, int arrayIndex) => ((IDictionary<string, string>)Entries).CopyTo(array, arrayIndex);

    public IEnumerator<KeyValuePair<string, string>> GetEnumerator() => Entries.GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();

    public bool Remove(string key) => _entries is not null && Writable.Remove(key);

    public bool Remove(KeyValuePair<string, string> item) => _entries is not null && ((IDictionary<string, string>)Writable).Remove(item);

    public bool TryGetValue(string key, [MaybeNullWhen(false)] out string value) => Entries.TryGetValue(key, out value);

    /// <summary>The entries as they are now, for a snapshot (keys already checked).</summary>
    public KeyValuePair<string, string>[] ToArray() => [.. Entries];

    /// <summary>The metadata section for these entries (<see cref="MetadataSection.Encode"/>), or null when there are none: a call without
    /// metadata carries no section.</summary>
    public byte[]? Encode() => Count == 0 ? null : MetadataSection.Encode(_entries!);

    private static string Check(string key)
    {
        ArgumentNullException.ThrowIfNull(key);
        return MetadataSection.DescribeInvalidKey(key) is { } problem ? throw new ArgumentException(problem, nameof(key)) : key;
    }

    private static string CheckValue(string key, string value) =>
        value ?? throw new ArgumentNullException(
            nameof(value), $"The value of the Mux metadata key '{key}' is null; send an empty string instead, or leave the key out.");
}
