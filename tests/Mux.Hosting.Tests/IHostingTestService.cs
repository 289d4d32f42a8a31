namespace Mux.Hosting.Tests;

/// <summary>The contract the hosting tests serve and call; Mux generates its proxy and dispatcher.</summary>
[MuxService]
public interface IHostingTestService
{
    ValueTask<int> Add(int a, int b);

    /// <summary>Returns the id of the implementation instance that served the call.</summary>
    Task<int> GetInstanceId();

    /// <summary>Waits until the test opens <see cref="InstanceTracker.Gate"/> (or 30 s pass), then returns <paramref name="value"/>.</summary>
    Task<int> WaitForGate(int value);

    /// <summary>Waits until its token is cancelled (or 30 s pass), then records <paramref name="value"/>
    /// in <see cref="InstanceTracker.Canceled"/> and throws.</summary>
    Task WaitForCancellation(int value, CancellationToken cancellationToken = default);

    /// <summary>Throws InvalidOperationException with the given message.</summary>
    Task Fail(string message);
}
