using System.ComponentModel;

namespace Mux;

/// <summary>One method of a <see cref="MuxServiceDefinition{TService}"/>.</summary>
/// <typeparam name="TService">The service contract.</typeparam>
/// <param name="Id">The method's wire id.</param>
/// <param name="Name">The method's name.</param>
/// <param name="Handler">Runs the method for one call.</param>
[EditorBrowsable(EditorBrowsableState.Never)] // Part of a generated MuxServiceDefinition.
public sealed record MuxMethodDefinition<TService>(uint Id, string Name, MuxMethodHandler<TService> Handler)
    where TService : class;
