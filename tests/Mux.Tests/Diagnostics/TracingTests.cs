using System.Diagnostics;

namespace Mux.Tests.Diagnostics;

/// <summary>Spans of the "Mux" activity source across a real TCP connection. In a collection of
/// their own, run one at a time: an ActivityListener sees the whole process.</summary>
[Collection(nameof(TelemetryCollection))]
public class TracingTests
{
    private const string ServiceName = "Mux.Tests.Diagnostics.ITelemetryTestService";

    [Fact]
    public async Task Call_OverTcp_ServerSpanIsAChildOfTheClientSpan()
    {
        using var recorder = new SpanRecorder();
        await using TelemetryHost host = await TelemetryHost.StartAsync();
        using var root = new Activity("test root").Start();

        int sum = await host.Proxy.Add(2, 3);
        root.Stop();
        Activity[] spans = await recorder.WaitForSpansAsync(root.TraceId, 2, TelemetryHost.Patience);

        Assert.Equal(5, sum);
        Activity client = Assert.Single(spans, s => s.Kind == ActivityKind.Client);
        Activity server = Assert.Single(spans, s => s.Kind == ActivityKind.Server);
        Assert.Equal(root.SpanId, client.ParentSpanId);
        Assert.Equal(client.TraceId, server.TraceId);
        Assert.Equal(client.SpanId, server.ParentSpanId);
        Assert.True(server.HasRemoteParent);
        Assert.Equal(ActivityTraceFlags.Recorded, server.ActivityTraceFlags & ActivityTraceFlags.Recorded);

        foreach (Activity span in spans)
        {
            Assert.Equal(ServiceName + "/Add", span.OperationName);
            Assert.Equal("mux", span.GetTagItem("rpc.system"));
            Assert.Equal(ServiceName, span.GetTagItem("rpc.service"));
            Assert.Equal("Add", span.GetTagItem("rpc.method"));
            Assert.Equal("Ok", span.GetTagItem("rpc.response.status_code"));
            Assert.Equal(ActivityStatusCode.Unset, span.Status);
            Assert.Null(span.GetTagItem("error.type"));
        }

        Assert.Equal("127.0.0.1", client.GetTagItem("server.address"));
        Assert.Equal(host.EndPoint.Port, client.GetTagItem("server.port"));
    }

    [Fact]
    public async Task Call_WhenTheHandlerThrows_BothSpansEndWithErrorStatus()
    {
        using var recorder = new SpanRecorder();
        await using TelemetryHost host = await TelemetryHost.StartAsync();
        using var root = new Activity("test root").Start();

        var error = await Assert.ThrowsAsync<MuxRemoteException>(() => host.Proxy.Fail("broken on purpose"));
        root.Stop();
        Activity[] spans = await recorder.WaitForSpansAsync(root.TraceId, 2, TelemetryHost.Patience);

        Assert.Equal(MuxStatusCode.HandlerFailed, error.StatusCode);
        Activity client = Assert.Single(spans, s => s.Kind == ActivityKind.Client);
        Activity server = Assert.Single(spans, s => s.Kind == ActivityKind.Server);
        Assert.Equal(client.SpanId, server.ParentSpanId);
        foreach (Activity span in spans)
        {
            Assert.Equal(ActivityStatusCode.Error, span.Status);
            Assert.Equal("HandlerFailed", span.GetTagItem("rpc.response.status_code"));
        }

        // The server's trace has the handler's own message; the client's has what the caller was told
        // (a generic message: detailed errors are off by default).
        Assert.Equal("broken on purpose", server.StatusDescription);
        Assert.Equal(error.Message, client.StatusDescription);
        Assert.DoesNotContain("broken on purpose", error.Message, StringComparison.Ordinal);

        Assert.Equal("HandlerFailed", client.GetTagItem("error.type"));
        Assert.Equal(typeof(InvalidOperationException).FullName, server.GetTagItem("error.type"));
    }

    [Fact]
    public async Task Handler_SeesTheServerSpanAsActivityCurrent()
    {
        using var recorder = new SpanRecorder();
        await using TelemetryHost host = await TelemetryHost.StartAsync();
        using var root = new Activity("test root").Start();

        string seen = await host.Proxy.CurrentActivity();
        root.Stop();
        Activity[] spans = await recorder.WaitForSpansAsync(root.TraceId, 2, TelemetryHost.Patience);

        Activity server = Assert.Single(spans, s => s.Kind == ActivityKind.Server);
        Assert.Equal($"{server.TraceId}/{server.SpanId}/{ServiceName}/CurrentActivity", seen);
    }

    [Fact]
    public async Task Call_LeavesTheCallersCurrentActivityAsItWas()
    {
        using var recorder = new SpanRecorder();
        await using TelemetryHost host = await TelemetryHost.StartAsync();
        using var root = new Activity("test root").Start();

        ValueTask<int> call = host.Proxy.Add(1, 1);
        Activity? afterSend = Activity.Current;
        await call;

        Assert.Same(root, afterSend);
        Assert.Same(root, Activity.Current);
    }

    [Fact]
    public async Task Call_WithoutAnActivityAroundIt_StartsANewTraceThatTheServerJoins()
    {
        using var recorder = new SpanRecorder();
        await using TelemetryHost host = await TelemetryHost.StartAsync();
        Activity.Current = null;

        string seen = await host.Proxy.CurrentActivity();

        string traceId = seen.Split('/')[0];
        Activity[] spans = await recorder.WaitForSpansAsync(ActivityTraceId.CreateFromString(traceId), 2, TelemetryHost.Patience);
        Activity client = Assert.Single(spans, s => s.Kind == ActivityKind.Client);
        Activity server = Assert.Single(spans, s => s.Kind == ActivityKind.Server);
        Assert.Equal(default, client.ParentSpanId);
        Assert.Equal(client.SpanId, server.ParentSpanId);
    }
}

/// <summary>Tests that listen to the process-wide "Mux" source or meter run one at a time.</summary>
[CollectionDefinition(nameof(TelemetryCollection), DisableParallelization = true)]
public sealed class TelemetryCollection;
