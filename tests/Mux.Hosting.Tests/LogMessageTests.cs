using System.Reflection;
using Microsoft.Extensions.Logging;

namespace Mux.Hosting.Tests;

/// <summary>Log event ids are a contract with users' log filters and alerts: each is unique across
/// Mux and Mux.Hosting, and each carries an event name. This project references both assemblies.</summary>
public sealed class LogMessageTests
{
    [Fact]
    public void EveryLogMessage_HasAUniqueFixedIdAndAnEventNameEqualToItsMethod()
    {
        var seen = new Dictionary<int, string>();
        foreach (Assembly assembly in new[] { typeof(MuxClient).Assembly, typeof(MuxServerBuilder).Assembly })
        {
            foreach (MethodInfo method in assembly.GetTypes().SelectMany(t => t.GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.DeclaredOnly)))
            {
                if (method.GetCustomAttribute<LoggerMessageAttribute>() is not { } message)
                {
                    continue;
                }

                string where = $"{method.DeclaringType!.Name}.{method.Name}";
                Assert.True(method.Name == message.EventName, $"{where} has event name '{message.EventName}'.");
                Assert.True(seen.TryAdd(message.EventId, where), $"Event id {message.EventId} is used by {seen.GetValueOrDefault(message.EventId)} and {where}.");
                Assert.True(assembly == typeof(MuxClient).Assembly ? message.EventId < 100 : message.EventId >= 100, $"{where} has id {message.EventId}: Mux uses ids below 100, Mux.Hosting from 100.");
            }
        }

        // 9 in Mux (ConnectionLog, ServerLog) and 8 in Mux.Hosting: a loader that found none would pass vacuously.
        Assert.True(seen.Count >= 17, $"found only {seen.Count} log messages");
    }
}
