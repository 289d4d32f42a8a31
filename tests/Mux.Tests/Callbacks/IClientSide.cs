namespace Mux.Tests.Callbacks;

/// <summary>What the tests' clients serve to their server.</summary>
[MuxService]
public interface IClientSide
{
    /// <summary>The client's own answer for <paramref name="value"/> (each test client answers differently).</summary>
    Task<int> Transform(int value);

    /// <summary>Waits until the test releases it or the token fires (then throws).</summary>
    Task<string> Slow(string tag, CancellationToken cancellationToken);

    /// <summary>Answers at once.</summary>
    ValueTask<string> Fast(string client); // "client": the generated proxy has a field of that name.

    /// <summary>Throws an InvalidOperationException whose message must not reach the server.</summary>
    Task Fail();
}
