using System.Diagnostics.CodeAnalysis;

namespace Mux.LoadRunner;

/// <summary>The checks every system's client makes on every answer, so no system counts a wrong one.</summary>
internal static class BenchChecks
{
    /// <summary>The City every user of <see cref="BenchData.Users"/> has.</summary>
    public const string City = "GuangZhou";

    public static void Sum(int sum)
    {
        if (sum != 3)
        {
            Fail($"Add(1, 2) returned {sum}, not 3.");
        }
    }

    public static void Users(int expected, int count, string? firstCity)
    {
        if (count != expected || firstCity != City)
        {
            Fail($"List({expected}) returned {count} users (first city '{firstCity}').");
        }
    }

    public static void Bytes(int length)
    {
        if (length != 1024)
        {
            Fail($"Bytes(1024) returned {length} bytes.");
        }
    }

    [DoesNotReturn]
    private static void Fail(string message) => throw new InvalidDataException(message);
}
