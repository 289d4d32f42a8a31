namespace Mux.Tests.Callbacks;

/// <summary>The tests' server: handlers that call back the client that called them.</summary>
[MuxService]
public interface ICallbackHub
{
    /// <summary>Calls the caller's <see cref="IClientSide.Transform"/> for 1..count, one after the
    /// other, and returns the sum of its answers.</summary>
    Task<int> SumOfClientAnswers(int count, MuxCallContext? context = null);

    /// <summary>Enumerates the caller's <see cref="IClientCounter.Count"/> through
    /// MuxCallContext.GetClientProxy, reading at most <paramref name="take"/> items, and returns them.</summary>
    Task<int[]> CountOnClient(int count, int take, MuxCallContext? context = null);

    /// <summary>Keeps the caller's <see cref="MuxRemoteClient"/> for the test to call later.</summary>
    Task Register(MuxCallContext? context = null);
}
