using System.Net.Security;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.ServiceDiscovery;

namespace Mux.Hosting.ServiceDiscovery;

/// <summary>
/// The last configure step of <see cref="MuxClientOptions"/> (after configuration and the
/// delegate given to AddMuxClient): turns <see cref="MuxClientOptions.Service"/> into a
/// <see cref="MuxServiceEndPointResolver"/> over the host's service discovery, and its scheme into
/// the transport (<c>muxs</c>: TLS, with the service's name as the target host unless one is set).
/// </summary>
internal sealed class MuxClientServiceSetup(IServiceProvider services) : IPostConfigureOptions<MuxClientOptions>
{
    public void PostConfigure(string? name, MuxClientOptions options)
    {
        if (options.Service is not { } service)
        {
            return;
        }

        MuxServiceName parsed = MuxServiceName.Parse(service, "MuxClientOptions.Service (configuration key Mux:Client:Service)");
        if (options.EndPoint is not null || options.EndPoints.Count > 0)
        {
            // Said here, where the service is known to come from Service: the core's check would
            // speak of the EndPointResolver made below, which nobody set.
            throw new InvalidOperationException($"MuxClientOptions.Service (configuration key Mux:Client:Service) is '{service}', and {(options.EndPoint is not null ? "EndPoint (Mux:Client:Connect)" : "EndPoints")} is set too. Set Service to find the instances by name, or {(options.EndPoint is not null ? "EndPoint for one server" : "EndPoints for a fixed list")}, not both.");
        }

        if (parsed.IsTls)
        {
            options.Tls ??= new SslClientAuthenticationOptions();
            options.Tls.TargetHost ??= parsed.Host;
        }
        else if (options.Tls is not null)
        {
            throw new InvalidOperationException($"MuxClientOptions.Service is '{service}', a plaintext service, but MuxClientOptions.Tls is set. Name the service {MuxServiceName.TlsScheme}://{parsed.Host} for TLS instances, or remove Tls (and Mux:Client:Tls).");
        }

        // Resolved here, not injected: hosts that never set Service do not build service discovery.
        options.EndPointResolver ??= new MuxServiceEndPointResolver(
            services.GetRequiredService<ServiceEndpointResolver>(),
            service,
            (options.LoggerFactory ?? NullLoggerFactory.Instance).CreateLogger(MuxHostingLog.Category));
    }
}
