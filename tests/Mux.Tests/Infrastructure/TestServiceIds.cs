namespace Mux.Tests.Infrastructure;

/// <summary>Method ids of <see cref="ITestService"/>, for tests that write raw frames.</summary>
internal static class TestServiceIds
{
    public static readonly uint Add = MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService.Add");

    public static readonly uint Echo = MuxMethodId.Compute("Mux.Tests.Infrastructure.ITestService.Echo");
}
