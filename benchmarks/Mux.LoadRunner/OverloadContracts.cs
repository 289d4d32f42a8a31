namespace Mux.LoadRunner;

/// <summary>--overload: one call that takes about a millisecond of the server's CPU.</summary>
[MuxService]
public interface IOverloadService
{
    /// <summary>Spins for the handler's work time and returns <paramref name="callId"/>, which the server counts once per run.</summary>
    Task<long> Work(long callId);
}
