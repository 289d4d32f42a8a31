using System.ComponentModel;

namespace Mux;

/// <summary>
/// Runs one method of a service for one call: reads the arguments from <paramref name="call"/>,
/// invokes the method on <paramref name="service"/>, and returns its result through
/// <see cref="MuxServerCall.ReturnAsync{T}(ValueTask{T})"/>. Generated dispatchers provide these;
/// there is rarely a reason to write one by hand.
/// </summary>
/// <typeparam name="TService">The service contract.</typeparam>
/// <param name="service">The implementation that serves the call.</param>
/// <param name="call">The call: its arguments, cancellation token and response.</param>
/// <returns>A task that completes when the response has been sent.</returns>
[EditorBrowsable(EditorBrowsableState.Never)] // Generated dispatchers implement these.
public delegate ValueTask MuxMethodHandler<in TService>(TService service, MuxServerCall call)
    where TService : class;
