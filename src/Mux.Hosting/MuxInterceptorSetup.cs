using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace Mux.Hosting;

/// <summary>An interceptor added with <see cref="MuxServerBuilder.AddInterceptor{TInterceptor}"/> or
/// <see cref="MuxClientBuilder.AddInterceptor{TInterceptor}"/>: its type, resolved from the service
/// provider when the options are made.</summary>
internal sealed record MuxInterceptorRegistration(Type InterceptorType, bool ForServer);

/// <summary>
/// The last configure step of the options: appends the interceptors added through the builders, resolved from DI in the
/// order they were added, after those the configure delegates put in the options. Runs once per options object (the
/// host's singleton), so each interceptor is resolved once, when the server or client is created.
/// </summary>
internal sealed class MuxInterceptorSetup(IServiceProvider services)
    : IPostConfigureOptions<MuxServerOptions>, IPostConfigureOptions<MuxClientOptions>
{
    public void PostConfigure(string? name, MuxServerOptions options) => Append(options.Interceptors, forServer: true);

    public void PostConfigure(string? name, MuxClientOptions options) => Append(options.Interceptors, forServer: false);

    private void Append<TInterceptor>(IList<TInterceptor> interceptors, bool forServer)
    {
        foreach (MuxInterceptorRegistration registration in services.GetServices<MuxInterceptorRegistration>())
        {
            if (registration.ForServer == forServer)
            {
                interceptors.Add((TInterceptor)services.GetRequiredService(registration.InterceptorType));
            }
        }
    }
}
