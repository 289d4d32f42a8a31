using Microsoft.Extensions.Logging;

namespace Mux.Tests.Infrastructure;

/// <summary>A logger factory that is its own logger, for tests that act when the library logs an
/// event (the moment a log line is written is often the one a race needs): a subclass says what
/// <see cref="Log"/> does; everything else is the plain enabled logger.</summary>
public abstract class LogHook : ILoggerFactory, ILogger
{
    public ILogger CreateLogger(string categoryName) => this;

    public void AddProvider(ILoggerProvider provider)
    {
    }

    public void Dispose()
    {
    }

    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => null;

    public bool IsEnabled(LogLevel logLevel) => true;

    public abstract void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter);
}
