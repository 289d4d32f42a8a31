using System.Text.Json;
using Mux.Samples.Contracts;

namespace Mux.Samples.Load;

/// <summary>The summary a load run ends with: a line for people and a JSON line for scripts.</summary>
internal static class LoadSummary
{
    /// <summary>
    /// Asks a server started with --serve how many connections it accepted. Any other server does not
    /// answer <see cref="ILoadStats"/>, and a server that has gone away cannot answer: then the count
    /// is unknown (null), never a guess. The summary does not wait more than two seconds for it.
    /// </summary>
    public static async Task<long?> AskServerForConnectionsAsync(MuxClient client)
    {
        try
        {
            return await client.CreateProxy<ILoadStats>().GetConnectionsAccepted().AsTask().WaitAsync(TimeSpan.FromSeconds(2));
        }
        catch (MuxRemoteException ex) when (ex.StatusCode == MuxStatusCode.UnknownMethod)
        {
            return null;
        }
        catch (Exception ex) when (ex is MuxConnectionException or TimeoutException)
        {
            return null;
        }
    }

    /// <summary>The line for people; an unknown connection count reads "unknown", with why.</summary>
    public static string Line(LoadResult result, long? connections, bool interrupted)
    {
        string connectionText = connections is long known ? known.ToString(System.Globalization.CultureInfo.InvariantCulture) : "unknown (the server did not say)";
        return $"calls: {result.Calls:N0}  errors: {result.Errors}  calls/s: {result.CallsPerSecond:N0}  p50: {result.P50Us} us  p99: {result.P99Us} us  connections: {connectionText}  reconnects: {result.Reconnects}{(interrupted ? "  (stopped by signal)" : string.Empty)}";
    }

    /// <summary>The JSON line; an unknown connection count is null. "errors" stays the total and the
    /// first of the error fields: CI greps for <c>"errors":0,</c>.</summary>
    public static string Json(string method, int callers, LoadResult result, long? connections, bool interrupted, MuxConnectionStatistics stats)
    {
        var summary = new Dictionary<string, object?>
        {
            ["system"] = "mux",
            ["method"] = method,
            ["callers"] = callers,
            ["seconds"] = Math.Round(result.Seconds, 1),
            ["calls"] = result.Calls,
            ["errors"] = result.Errors.Total,
            ["connectionErrors"] = result.Errors.Connection,
            ["timeoutErrors"] = result.Errors.Timeout,
            ["otherErrors"] = result.Errors.Other,
            ["callsPerSecond"] = Math.Round(result.CallsPerSecond),
            ["p50Us"] = result.P50Us,
            ["p99Us"] = result.P99Us,
            ["connections"] = connections,
            ["reconnects"] = result.Reconnects,
            ["interrupted"] = interrupted,
            ["framesPerFlush"] = Math.Round(stats.FramesPerFlush, 2),
            ["framesPerSocketSend"] = Math.Round(stats.FramesPerSocketSend, 2),
        };
        return JsonSerializer.Serialize(summary, LoadJsonContext.Default.DictionaryStringObject);
    }
}
