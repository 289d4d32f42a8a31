using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Mux.Connection;

/// <summary>
/// The logger a connection writes through: the user's, with its failures swallowed. A connection
/// logs on thread-pool work items, its timer and its reader loop, in the middle of answering or
/// failing calls and of closing; a logger that throws there (Microsoft.Extensions.Logging's Logger
/// rethrows its providers' failures as one AggregateException) would crash the process or leave
/// calls unanswered and a close half done. Losing the line is the lesser harm: there is nowhere
/// else to report it.
/// </summary>
internal sealed class GuardedLogger(ILogger inner) : ILogger
{
    /// <summary>Guards <paramref name="logger"/>, unless it never logs or is guarded already.</summary>
    public static ILogger Wrap(ILogger logger) => logger is NullLogger or GuardedLogger ? logger : new GuardedLogger(logger);

    public bool IsEnabled(LogLevel logLevel)
    {
        try
        {
            return inner.IsEnabled(logLevel);
        }
        catch (Exception)
        {
            return false; // A logger that cannot say would fail to log too.
        }
    }

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
    {
        try
        {
            inner.Log(logLevel, eventId, state, exception, formatter);
        }
        catch (Exception)
        {
            // See the class comment: the entry is lost, the connection's work goes on.
        }
    }

    // Mux opens no scopes: only what the interface asks for.
    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => inner.BeginScope(state);
}
