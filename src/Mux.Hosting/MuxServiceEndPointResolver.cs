using System.Net;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Primitives;
using Microsoft.Extensions.ServiceDiscovery;
using Mux.Hosting.ServiceDiscovery;

namespace Mux.Hosting;

/// <summary>
/// Finds the instances of a Mux service through Microsoft.Extensions.ServiceDiscovery's
/// <see cref="ServiceEndpointResolver"/>, for <see cref="MuxClientOptions.EndPointResolver"/>.
/// AddMuxClient creates one for <see cref="MuxClientOptions.Service"/>; create your own when you
/// build a <see cref="MuxClient"/> yourself.
/// </summary>
/// <remarks>
/// <para>With AddServiceDiscovery's providers: the configuration provider reads
/// <c>Services:users:mux</c> for <c>mux://users</c> (<c>Services:users:muxs</c> for <c>muxs://users</c>),
/// one <c>host:port</c> per instance (<c>Services:users:mux:0 = 10.0.0.5:5000</c>, <c>:1</c>, ...),
/// and follows reloads of the configuration; without such a section the pass-through provider
/// returns the name itself (one instance, <c>users</c> at the name's port).</para>
/// <para>DNS (A/AAAA or SRV records) needs the package Microsoft.Extensions.ServiceDiscovery.Dns,
/// which Mux does not reference: add it and register its provider
/// (<c>services.AddServiceDiscovery().AddDnsSrvServiceEndpointProvider()</c>, or
/// <c>AddDnsServiceEndpointProvider()</c>) before AddMuxClient; this resolver uses every provider
/// registered.</para>
/// <para>Service discovery caches what it found and refreshes it when its source changes; the
/// client asks again soon after such a change (<see cref="WaitForChangeAsync"/>), every
/// <see cref="MuxClientOptions.ResolveInterval"/>, and soon after a connection to an instance is lost.</para>
/// </remarks>
public sealed class MuxServiceEndPointResolver : IMuxEndPointResolver
{
    private readonly ServiceEndpointResolver _resolver;
    private readonly MuxServiceName _service;

    // The last answer's change token. Written by ResolveAsync, read by WaitForChangeAsync, both on the client's one
    // resolve loop; volatile for anyone else who calls them.
    private volatile IChangeToken? _changeToken;

    private readonly ILogger _logger;

    // The instances the last answer skipped, as logged, or null. Used by ResolveAsync only.
    private string? _skipped;

    /// <summary>Creates a resolver of <paramref name="service"/>.</summary>
    /// <param name="resolver">Service discovery's resolver (registered by <c>AddServiceDiscovery()</c>).</param>
    /// <param name="service">The service's name: <c>mux://users</c> (plaintext) or <c>muxs://users</c>
    /// (TLS), optionally with the port of instances found without one (<c>mux://users:5000</c>).</param>
    /// <exception cref="InvalidOperationException"><paramref name="service"/> is not such a name.</exception>
    public MuxServiceEndPointResolver(ServiceEndpointResolver resolver, string service)
        : this(resolver, service, NullLogger.Instance)
    {
    }

    /// <summary>As the public constructor, logging the instances it skips to <paramref name="logger"/>.</summary>
    internal MuxServiceEndPointResolver(ServiceEndpointResolver resolver, string service, ILogger logger)
    {
        ArgumentNullException.ThrowIfNull(resolver);
        ArgumentNullException.ThrowIfNull(service);
        _resolver = resolver;
        _service = MuxServiceName.Parse(service, "The Mux service name");
        _logger = logger;
    }

    /// <inheritdoc/>
    /// <remarks>An instance found without a port, when the service's name gives none, is skipped,
    /// and logged (a warning, once for as long as the same ones are found).</remarks>
    /// <exception cref="InvalidOperationException">Instances were found, but none with a port, and
    /// the service's name gives none.</exception>
    public async ValueTask<IReadOnlyList<EndPoint>> ResolveAsync(CancellationToken cancellationToken)
    {
        // Kept across an ask that fails, a changed token would end every wait at once: the client would ask a resolver
        // that is down again and again, rather than at its interval.
        _changeToken = null;
        ServiceEndpointSource source = await _resolver.GetEndpointsAsync(_service.Text, cancellationToken).ConfigureAwait(false);
        _changeToken = source.ChangeToken;
        var endPoints = new List<EndPoint>(source.Endpoints.Count);
        List<string>? withoutPort = null;
        foreach (ServiceEndpoint endpoint in source.Endpoints)
        {
            if (ToMuxEndPoint(endpoint.EndPoint, ref withoutPort) is { } endPoint && !endPoints.Contains(endPoint))
            {
                endPoints.Add(endPoint);
            }
        }

        // One instance listed without its port must not take the others down with it; only when
        // it leaves none is it the answer's failure.
        string? skipped = withoutPort is null ? null : "'" + string.Join("', '", withoutPort) + "'";
        if (skipped is not null && endPoints.Count == 0)
        {
            throw new InvalidOperationException(
                $"Service discovery found no instance of {_service.Text} with a port: {skipped} " +
                $"{(withoutPort!.Count == 1 ? "has" : "have")} none. {PortHint}");
        }

        // Said once while the same instances are skipped: the client asks at every interval.
        if (skipped != _skipped)
        {
            _skipped = skipped;
            if (skipped is not null)
            {
                MuxHostingLog.InstancesWithoutPortSkipped(_logger, skipped, _service.Text, PortHint);
            }
        }

        return endPoints;
    }

    /// <inheritdoc/>
    /// <remarks>Follows service discovery's change token (a reloaded configuration section, for example). After an ask
    /// that failed there is no answer to change: it waits until cancelled, and the client asks again at its interval.</remarks>
    public async ValueTask WaitForChangeAsync(CancellationToken cancellationToken)
    {
        IChangeToken? token = _changeToken;
        if (token is { HasChanged: true })
        {
            return;
        }

        var changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        // A token that cannot call back (a polled one) leaves the wait to the client's period.
        using IDisposable? registration = token is { ActiveChangeCallbacks: true }
            ? token.RegisterChangeCallback(static state => ((TaskCompletionSource)state!).TrySetResult(), changed)
            : null;
        await changed.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>The service's name, as given.</summary>
    public override string ToString() => _service.Text;

    // Providers give IP and DNS endpoints for host:port values and UriEndPoint for values with a scheme
    // (mux://10.0.0.5:5000). A Mux connection needs a port: an instance without one takes the name's, else it is skipped.
    private EndPoint? ToMuxEndPoint(EndPoint found, ref List<string>? withoutPort)
    {
        switch (found)
        {
            case IPEndPoint ip:
                return ip.Port != 0 ? ip
                    : _service.Port != 0 ? new IPEndPoint(ip.Address, _service.Port)
                    : WithoutPort(ip.Address.ToString(), ref withoutPort);
            case DnsEndPoint dns:
                return dns.Port != 0 ? dns
                    : _service.Port != 0 ? new DnsEndPoint(dns.Host, _service.Port, dns.AddressFamily)
                    : WithoutPort(dns.Host, ref withoutPort);
            case UriEndPoint { Uri: var uri }:
                if (!string.Equals(uri.Scheme, _service.Scheme, StringComparison.OrdinalIgnoreCase))
                {
                    // An instance of another scheme (http://...) under the same service is not ours.
                    return null;
                }

                int port = uri.IsDefaultPort ? _service.Port : uri.Port;
                if (port == 0)
                {
                    return WithoutPort(uri.OriginalString, ref withoutPort);
                }

                return uri.HostNameType is UriHostNameType.IPv4 or UriHostNameType.IPv6
                    ? new IPEndPoint(IPAddress.Parse(uri.DnsSafeHost), port)
                    : new DnsEndPoint(uri.DnsSafeHost, port);
            default:
                // Another transport's endpoint (a Unix domain socket): Mux connects to it as it is.
                return found;
        }
    }

    private static EndPoint? WithoutPort(string instance, ref List<string>? withoutPort)
    {
        (withoutPort ??= []).Add(instance);
        return null;
    }

    private string PortHint =>
        $"Give each instance's port in configuration (Services:{_service.Host}:{_service.Scheme}:0 = \"10.0.0.5:5000\") " +
        $"or a default one in the name ({_service.Scheme}://{_service.Host}:5000).";
}
