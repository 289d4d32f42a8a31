using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Mux.Connection;

/// <summary>
/// A connection logs in the middle of answering calls and of closing, where a logger that throws would crash the process
/// or leave calls unanswered. Losing the line is the lesser harm.
/// </summary>

internal sealed class GuardedLogger(ILogger inner) : ILogger
{
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
            // The entry is lost; the connection's work goes on.
        }
    }

    // Mux opens no scopes: only what the interface asks for.
    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => inner.BeginScope(state);
}
