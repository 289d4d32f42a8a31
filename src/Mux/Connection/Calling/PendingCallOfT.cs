using System.Buffers;
using System.Collections.Concurrent;
using System.Threading.Tasks.Sources;
using MessagePack;

namespace Mux.Connection;

/// <summary>The caller awaits this object as its <see cref="ValueTask{TResult}"/>; once the result has been read it returns to a
/// per-type pool, so a call allocates no completion state in steady state.</summary>
internal sealed class PendingCall<T> : PendingCall, IValueTaskSource<T>, IValueTaskSource
{
    private const int MaxPooled = 4096;

    private static readonly ConcurrentQueue<PendingCall<T>> s_pool = new();
    private static int s_pooledCount;

    // In front of the shared pool: a caller that awaits its call on the thread that makes the next one (a closed loop, a
    // handler calling on) rents and returns without touching the shared queue's lines.
    [ThreadStatic]
    private static PendingCall<T>? t_cached;

    // Completed on a pool thread inside Execute, so continuations may run inline: that thread is this call's, not the reader loop.
    private ManualResetValueTaskSourceCore<T> _core;

    private PendingCall()
    {
        _core.RunContinuationsAsynchronously = false;
    }

    public short Version => _core.Version;

    public static PendingCall<T> Rent(OutgoingCalls calls, uint methodId, in CallDeadline deadline)
    {
        PendingCall<T>? call = t_cached;
        if (call is not null)
        {
            t_cached = null;
        }
        else if (s_pool.TryDequeue(out call))
        {
            Interlocked.Decrement(ref s_pooledCount);
        }
        else
        {
            call = new PendingCall<T>();
        }

        call.Initialize(calls, methodId, deadline);
        return call;
    }

    /// <summary>Once its result has been read, or unused (its Request never went out).</summary>
    public void Return()
    {
        _core.Reset();
        if (t_cached is null)
        {
            t_cached = this;
            return;
        }

        if (Interlocked.Increment(ref s_pooledCount) <= MaxPooled)
        {
            s_pool.Enqueue(this);
        }
        else
        {
            Interlocked.Decrement(ref s_pooledCount);
        }
    }

    protected override void SetResultFromPayload(in ReadOnlySequence<byte> payload)
    {
        T result;
        try
        {
            result = MessagePackSerializer.Deserialize<T>(payload, Calls!.Connection.SerializerOptions);
        }
        catch (Exception ex)
        {
            _core.SetException(new MessagePackSerializationException(
                $"The response to {MuxServiceRegistry.GetMethodDisplayName(MethodId)} could not be read as {typeof(T).Name}: " +
                ex.GetBaseException().Message, ex));
            return;
        }

        _core.SetResult(result);
    }

    protected override void SetException(Exception exception) => _core.SetException(exception);

    public T GetResult(short token)
    {
        if (token != _core.Version)
        {
            throw new InvalidOperationException(
                "The ValueTask of a Mux call was awaited twice; a ValueTask may be awaited once (use AsTask() to await more often).");
        }

        try
        {
            return _core.GetResult(token);
        }
        finally
        {
            Return();
        }
    }

    void IValueTaskSource.GetResult(short token) => GetResult(token);

    public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

    public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}
