using System.Collections.Concurrent;

namespace Mux.Tests.Pipeline;

/// <summary>A server interceptor that logs "{name} enter {method}" and "{name} exit {method}"
/// around next(), and what it saw of the call.</summary>
public sealed class LoggingServerInterceptor(string name, ConcurrentQueue<string> log) : IMuxServerInterceptor
{
    public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
    {
        log.Enqueue($"{name} enter {call.MethodName}");
        try
        {
            await next();
        }
        finally
        {
            log.Enqueue($"{name} exit {call.MethodName}");
        }
    }
}

/// <summary>A client interceptor that logs "{name} enter {method}" and "{name} exit {method}" around next().</summary>
public sealed class LoggingClientInterceptor(string name, ConcurrentQueue<string> log) : IMuxClientInterceptor
{
    public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
    {
        log.Enqueue($"{name} enter {call.MethodName}");
        try
        {
            await next();
        }
        finally
        {
            log.Enqueue($"{name} exit {call.MethodName}");
        }
    }
}

/// <summary>Refuses every call without a "tenant" in its metadata, before next().</summary>
public sealed class TenantCheck : IMuxServerInterceptor
{
    public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) =>
        call.Metadata.ContainsKey("tenant")
            ? next()
            : throw new MuxRemoteException(MuxStatusCode.PermissionDenied, $"{call.MethodName} needs a tenant.");
}

/// <summary>Runs the call, then throws <see cref="Failure"/> (after next() returned).</summary>
public sealed class ThrowAfterNext(Func<Exception> failure) : IMuxServerInterceptor, IMuxClientInterceptor
{
    public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
    {
        await next();
        throw failure();
    }

    public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
    {
        await next();
        throw failure();
    }
}

/// <summary>Adds metadata before next().</summary>
public sealed class AddMetadata(string key, string value) : IMuxClientInterceptor
{
    public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next)
    {
        call.Metadata[key] = value;
        return next();
    }
}

/// <summary>An interceptor that only awaits next(), as the benchmarks measure.</summary>
public sealed class PassThrough : IMuxServerInterceptor, IMuxClientInterceptor
{
    public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) => await next();

    public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => await next();
}

/// <summary>Misuse: starts next() and returns without awaiting it.</summary>
public sealed class ForgetsNext : IMuxServerInterceptor
{
    private int _returned;

    /// <summary>How many times it has returned.</summary>
    public int Returned => Volatile.Read(ref _returned);

    public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next)
    {
        _ = next();
        Interlocked.Increment(ref _returned);
        return default;
    }
}

/// <summary>Misuse: returns without calling next() (or throws <paramref name="refusal"/>'s exception,
/// refusing the call), and keeps it (to be called after the call ended).</summary>
public sealed class KeepsNext(Func<Exception>? refusal = null) : IMuxServerInterceptor, IMuxClientInterceptor
{
    private Func<ValueTask>? _next;

    /// <summary>The next() of the last call.</summary>
    public Func<ValueTask>? Next => Volatile.Read(ref _next);

    public ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) => Keep(next);

    public ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => Keep(next);

    private ValueTask Keep(Func<ValueTask> next)
    {
        Volatile.Write(ref _next, next);
        return refusal is null ? default : throw refusal();
    }
}
