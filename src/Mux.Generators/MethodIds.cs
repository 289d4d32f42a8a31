using System.Text;

namespace Mux.Generators;

/// <summary>Method ids: FNV-1a 32 of the UTF-8 bytes of the method's full name, like MuxMethodId.Compute.</summary>
internal static class MethodIds
{
    private const uint OffsetBasis = 2166136261;
    private const uint Prime = 16777619;

    public static uint Compute(string fullName)
    {
        uint hash = OffsetBasis;
        foreach (byte b in Encoding.UTF8.GetBytes(fullName))
        {
            hash = unchecked((hash ^ b) * Prime);
        }

        return hash;
    }
}
