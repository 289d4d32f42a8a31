using Mux.Connection;

namespace Mux;

/// <summary>
/// A call as its <see cref="IMuxClientInterceptor"/>s see it: what they change before <c>next()</c> is what is sent.
/// One object per call, made only when the client has interceptors.
/// </summary>
public sealed class MuxClientCall
{
    // Written by interceptors before next(); read when the call is sent.
    private TimeSpan _timeout;

    // The proxy's checked KeyValuePair<string, string>[] until an interceptor first touches Metadata, then the
    // CallMetadata made from it, so a call whose interceptors never look allocates none.
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
    /// The <see cref="MuxCallOptions.Metadata"/> of the proxy the call was made through, plus what interceptors add;
    /// keys follow the same rules. The server reads it as <see cref="MuxCallContext.Metadata"/>.
    /// </summary>
    public IDictionary<string, string> Metadata => CallMetadata;

    /// <summary>
    /// The <see cref="MuxCallOptions.Timeout"/> of the proxy, else <see cref="MuxClientOptions.CallTimeout"/>, counted
    /// from when the call was made (time spent before <c>next()</c> counts). Positive, or
    /// <see cref="System.Threading.Timeout.InfiniteTimeSpan"/> for none.
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

    internal CallMetadata CallMetadata
    {
        get
        {
            object current = _metadata;
            if (current is CallMetadata made)
            {
                return made;
            }

            // Published once, so every thread an interceptor hands the call to writes to the same dictionary.
            var first = new CallMetadata((KeyValuePair<string, string>[])current);
            return Interlocked.CompareExchange(ref _metadata, first, current) as CallMetadata ?? first;
        }
    }

    internal
 bool IsMetadataModified => _metadata is CallMetadata { IsModified: true };
}
