using Mux.Server;

namespace Mux;

/// <summary>Calls from the handler back to the client that made the call being served.</summary>
public sealed partial class MuxCallContext
{
    /// <summary>
    /// The client that made this call, to call the services it added with
    /// <see cref="MuxClient.AddService{TService}(TService)"/> on the same connection
    /// (<see cref="MuxRemoteClient.CreateProxy{TService}()"/>). The object may be kept after the call
    /// has finished: it stays usable while the client's connection is open.
    /// </summary>
    /// <exception cref="InvalidOperationException">This context is of a call a server started,
    /// served by a client: a client cannot be called back from there.</exception>
    public MuxRemoteClient Client => Call.Connection is ServerConnection server
        ? server.RemoteClient
        : throw new InvalidOperationException($"{MethodName} is a call from the server, served by this client; MuxCallContext.Client exists only in a server's handlers. Make calls to the server through your MuxClient.");

    /// <summary>A proxy of a service the calling client serves; the same as
    /// <c>Client.CreateProxy&lt;TService&gt;()</c>.</summary>
    /// <typeparam name="TService">A <see cref="MuxServiceAttribute"/> interface the client added
    /// with <see cref="MuxClient.AddService{TService}(TService)"/>.</typeparam>
    /// <returns>The proxy; its calls travel on the caller's connection.</returns>
    /// <exception cref="InvalidOperationException">See <see cref="Client"/>; or no proxy is
    /// registered for the interface.</exception>
    public TService GetClientProxy<TService>()
        where TService : class
        => Client.CreateProxy<TService>();
}
