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

    /// <summary>Throws InvalidOperationException with the given message.</summary>
    Task Fail(string message);
}
