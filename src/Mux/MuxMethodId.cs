using System.Text;

namespace Mux;

/// <summary>
/// Computes method ids: the 32-bit FNV-1a hash of the UTF-8 bytes of
/// <c>Namespace.IService.Method</c>. The source generator computes the same value at compile time;
/// this method exists for hand-written dispatchers, tools and tests.
/// </summary>
public static class MuxMethodId
{
    private const uint OffsetBasis = 2166136261;
    private const uint Prime = 16777619;

    /// <summary>Computes the id of a method from its full name.</summary>
    /// <param name="fullName">For example <c>MyApp.Contracts.IUserService.List</c>.</param>
    /// <returns>The method id.</returns>
    public static uint Compute(string fullName)
    {
        ArgumentException.ThrowIfNullOrEmpty(fullName);
        uint hash = OffsetBasis;
        foreach (byte b in Encoding.UTF8.GetBytes(fullName))
        {
            hash = unchecked((hash ^ b) * Prime);
        }

        return hash;
    }
}
