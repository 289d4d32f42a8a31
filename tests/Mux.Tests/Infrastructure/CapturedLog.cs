using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace Mux.Tests.Infrastructure;

/// <summary>A logger factory that keeps every entry, for tests that check what the library logged.</summary>
public sealed class CapturedLog : ILoggerFactory
{
    public ConcurrentQueue<(EventId EventId, LogLevel Level, string Message)> Entries { get; } = new();

    public ILogger CreateLogger(string categoryName) => new Logger(this);

    public void AddProvider(ILoggerProvider provider)
    {
    }

    public void Dispose()
    {
    }

    private sealed class Logger(CapturedLog log) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
            log.Entries.Enqueue((eventId, logLevel, formatter(state, exception)));
    }
}
