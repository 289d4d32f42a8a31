namespace Mux.LoadRunner;

/// <summary>
/// --interceptors: one server interceptor and one client interceptor that do nothing but
/// <c>await next()</c>, so the runner measures what the call pipeline itself costs (issue 25)
/// against a run without them. Set once, from the command line, before any client or server is made.
/// </summary>
internal sealed class PassThroughInterceptor : IMuxServerInterceptor, IMuxClientInterceptor
{
    /// <summary>Whether Mux servers and clients of this process get one each; set by --interceptors
    /// (the orchestrator passes it on to its server child processes). Written once at start-up.</summary>
    public static bool Enabled { get; set; }

    public async ValueTask InvokeAsync(MuxCallContext call, Func<ValueTask> next) => await next();

    public async ValueTask InvokeAsync(MuxClientCall call, Func<ValueTask> next) => await next();

    /// <summary>Adds one to <paramref name="options"/> when enabled.</summary>
    public static MuxServerOptions AddTo(MuxServerOptions options)
    {
        if (Enabled)
        {
            options.Interceptors.Add(new PassThroughInterceptor());
        }

        return options;
    }

    /// <summary>Adds one to <paramref name="options"/> when enabled.</summary>
    public static MuxClientOptions AddTo(MuxClientOptions options)
    {
        if (Enabled)
        {
            options.Interceptors.Add(new PassThroughInterceptor());
        }

        return options;
    }
}
