using System.Net;
using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Mux.AspNetCore.Tests;

/// <summary>What a test's web host is made of, beyond the Mux server serving <see cref="IWebTestService"/>.</summary>
public sealed class WebTestHostOptions
{
    /// <summary>The port Kestrel listens on (127.0.0.1); 0 for any free one.</summary>
    public int Port { get; set; }

    /// <summary>Serve HTTPS with this certificate (wss://).</summary>
    public X509Certificate2? Certificate { get; set; }

    /// <summary>With <see cref="Certificate"/>: ask the client for a certificate (any is accepted).</summary>
    public bool RequireClientCertificate { get; set; }

    /// <summary>The Mux server's options, after AddMuxServer's defaults.</summary>
    public Action<MuxServerOptions>? ConfigureMux { get; set; }

    /// <summary>More services (authentication, interceptors).</summary>
    public Action<WebApplicationBuilder, Mux.Hosting.MuxServerBuilder>? ConfigureServices { get; set; }

    /// <summary>Conventions on the MapMux endpoint (RequireAuthorization).</summary>
    public Action<IEndpointConventionBuilder>? ConfigureEndpoint { get; set; }
}

/// <summary>A started ASP.NET Core application on Kestrel (127.0.0.1) serving <see cref="IWebTestService"/>
/// through <c>MapMux("/mux")</c>. Disposing it opens the service's gate and stops the application.</summary>
public sealed class WebTestHost : IAsyncDisposable
{
    /// <summary>How long a test waits for something that should happen promptly before failing.</summary>
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    private WebTestHost(WebApplication app, int port, bool secure)
    {
        App = app;
        Port = port;
        Uri = new Uri($"{(secure ? "wss" : "ws")}://127.0.0.1:{port}/mux");
    }

    public WebApplication App { get; }

    public int Port { get; }

    /// <summary>The Mux endpoint: ws://127.0.0.1:PORT/mux (wss:// with a certificate).</summary>
    public Uri Uri { get; }

    /// <summary>The same endpoint's address over HTTP, for plain requests.</summary>
    public Uri HttpUri => new UriBuilder(Uri) { Scheme = Uri.Scheme == "wss" ? "https" : "http" }.Uri;

    public WebTestService Service => App.Services.GetRequiredService<WebTestService>();

    public MuxServer Server => App.Services.GetRequiredService<MuxServer>();

    public static async Task<WebTestHost> StartAsync(WebTestHostOptions? options = null)
    {
        options ??= new WebTestHostOptions();
        WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.Services.Configure<HostOptions>(o => o.ShutdownTimeout = Patience);
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, options.Port, listen =>
        {
            if (options.Certificate is { } certificate)
            {
                listen.UseHttps(https =>
                {
                    https.ServerCertificate = certificate;
                    if (options.RequireClientCertificate)
                    {
                        https.ClientCertificateMode = ClientCertificateMode.RequireCertificate;
                        https.ClientCertificateValidation = static (_, _, _) => true; // Self-signed: trusted by the test.
                    }
                });
            }
        }));
        builder.Services.AddSingleton<WebTestService>();
        Mux.Hosting.MuxServerBuilder mux = builder.Services.AddMuxServer(o =>
        {
            o.ShutdownTimeout = Patience;
            options.ConfigureMux?.Invoke(o);
        }).AddService<IWebTestService, WebTestService>(ServiceLifetime.Singleton);
        options.ConfigureServices?.Invoke(builder, mux);

        WebApplication app = builder.Build();
        IEndpointConventionBuilder endpoint = app.MapMux("/mux");
        options.ConfigureEndpoint?.Invoke(endpoint);
        await app.StartAsync();
        try
        {
            string address = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
            return new WebTestHost(app, new Uri(address).Port, options.Certificate is not null);
        }
        catch
        {
            await app.DisposeAsync();
            throw;
        }
    }

    /// <summary>Stops the application (GoAway and the drain first, then Kestrel), within <see cref="Patience"/>.</summary>
    public async Task StopAsync()
    {
        using var patience = new CancellationTokenSource(Patience);
        await App.StopAsync(patience.Token);
    }

    public async ValueTask DisposeAsync()
    {
        App.Services.GetService<WebTestService>()?.Gate.TrySetResult();
        await StopAsync();
        await App.DisposeAsync();
    }
}
