using Mux.Connection;

namespace Mux;

/// <summary>
/// A call a <see cref="MuxClient"/> is about to make, as its <see cref="IMuxClientInterceptor"/>s
/// see it: what they change before <c>next()</c> (its <see cref="Metadata"/> and
/// <see cref="Timeout"/>) is what is sent. One object per call, made only when the client has
/// interceptors.
/// </summary>
public sealed class MuxClientCall
{
    // The call's timeout (see Timeout). Written by interceptors before next(); read when it is sent.
    private TimeSpan _timeout;

    // The metadata: the bound proxy's entries (a KeyValuePair<string, string>[], checked already)
    // until an interceptor first touches Metadata, then the CallMetadata made from them, so that a
    // call whose interceptors never look at it allocates none.
    private object _metadata;

    internal MuxClientCall(string methodName, KeyValuePair<string, string>[] metadata, TimeSpan timeout, CancellationToken cancellationToken)
    {
        MethodName = methodName;
        _metadata = metadata;
        _timeout = timeout;
        CancellationToken = cancellationToken;
    }

    /// <summary>"IService.Method" of the method being called (for example <c>IUserService.Add</c>).</summary>
    public string MethodName { get; }

    /// <summary>
    /// The metadata sent with the call: the <see cref="MuxCallOptions.Metadata"/> of the proxy it
    /// was made through, plus what interceptors add. Keys are printable ASCII without spaces,
    /// compared case-insensitively (sent lower-case); keys starting with <c>mux-</c> are reserved
    /// (setting one throws <see cref="ArgumentException"/>). Values are any strings. The server
    /// reads it as <see cref="MuxCallContext.Metadata"/>; its <c>MaxMetadataSize</c> bounds it.
    /// </summary>
    public IDictionary<string, string> Metadata => CallMetadata;

    /// <summary>
    /// How long the call may take, counted from when it was made (the time interceptors spend
    /// before <c>next()</c> counts): the <see cref="MuxCallOptions.Timeout"/> of the proxy it was
    /// made through, else <see cref="MuxClientOptions.CallTimeout"/>. An interceptor may change it
    /// before <c>next()</c>; it is then the deadline sent to the server. Positive, or
    /// <see cref="System.Threading.Timeout.InfiniteTimeSpan"/> for none. For a streaming call it
    /// bounds only the wait for a connection (its token ends the call, as always).
    /// </summary>
    /// <exception cref="ArgumentOutOfRangeException">Set to zero, a negative value other than
    /// <see cref="System.Threading.Timeout.InfiniteTimeSpan"/>, or more than about 24.8 days.</exception>
    public TimeSpan Timeout
    {
        get => _timeout;
        set => _timeout = CallSettings.CheckTimeout(value, nameof(MuxClientCall) + "." + nameof(Timeout));
    }

    /// <summary>The caller's token for the call.</summary>
    public CancellationToken CancellationToken { get; }

    /// <summary>The metadata, with its validation and encoding; made on first use.</summary>
    internal CallMetadata CallMetadata
    {
        get
        {
            object current = _metadata;
            if (current is CallMetadata made)
            {
                return made;
            }

            // Published once: an interceptor that hands the call to other threads still has them
            // all write to the same dictionary.
            var first = new CallMetadata((KeyValuePair<string, string>[])current);
            return Interlocked.CompareExchange(ref _metadata, first, current) as CallMetadata ?? first;
        }
    }

    /// <summary>Whether an interceptor changed the metadata the call started from.</summary>
    internal bool IsMetadataModified => _metadata is CallMetadata { IsModified: true };
}
