namespace Mux.Connection;

/// <summary>Checks shared by the option classes, with messages that say how to fix the value.</summary>
internal static class OptionsValidation
{
    public static void RequirePositive(TimeSpan value, string owner, string name, bool allowInfinite)
    {
        if (allowInfinite && value == Timeout.InfiniteTimeSpan)
        {
            return;
        }

        if (value <= TimeSpan.Zero || value.TotalMilliseconds > int.MaxValue)
        {
            throw new InvalidOperationException(
                $"{owner}.{name} is {value}; it must be positive and at most " +
                $"{TimeSpan.FromMilliseconds(int.MaxValue)}{(allowInfinite ? ", or Timeout.InfiniteTimeSpan" : string.Empty)}.");
        }
    }

    /// <summary><paramref name="fix"/> says what to put in place of a null item.</summary>

    public static void RequireNoNulls<T>(IList<T> items, string owner, string name, string fix)
        where T : class
    {
        for (int i = 0; i < items.Count; i++)
        {
            if (items[i] is null)
            {
                throw new InvalidOperationException($"{owner}.{name}[{i}] is null. Remove it, or {fix}.");
            }
        }
    }
}
