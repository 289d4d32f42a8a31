namespace Mux.Tests.Deadlines;

/// <summary>Handlers that take the call's <see cref="MuxCallContext"/> as a parameter.</summary>
[MuxService]
public interface ICallContextProbe
{
    /// <summary>"value|MethodName|IsCallRunning|has deadline" as the handler saw its context.</summary>
    Task<string> Describe(int value, MuxCallContext? context = null);

    /// <summary>Waits until the context's token fires (or 30 s), keeps the context, then throws
    /// OperationCanceledException.</summary>
    Task WaitOnContextToken(MuxCallContext? context = null, CancellationToken cancellationToken = default);

    /// <summary>The context's remaining time in milliseconds; -1 when the caller sent no deadline.</summary>
    Task<long> RemainingMilliseconds(MuxCallContext? context = null);
}
