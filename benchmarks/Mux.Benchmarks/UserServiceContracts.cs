using System.Runtime.CompilerServices;
using Mux.Samples.Contracts;

namespace Mux.Benchmarks;

/// <summary>The sample contracts' method ids and registrations.</summary>
internal static class UserServiceContracts
{
    /// <summary>The ids the generator gave IUserService.Add and IUserService.List.</summary>
    public static readonly uint AddMethodId = MuxMethodId.Compute("Mux.Samples.Contracts.IUserService.Add");

    public static readonly uint ListMethodId = MuxMethodId.Compute("Mux.Samples.Contracts.IUserService.List");

    /// <summary>
    /// Runs the contracts assembly's module initializer, which registers the generated proxy,
    /// dispatcher and formatters. It runs by itself on the first call into that assembly; code
    /// that only asks the resolver for a formatter (serialization benchmarks) must not rely on that.
    /// </summary>
    public static void EnsureRegistered() => RuntimeHelpers.RunModuleConstructor(typeof(User).Module.ModuleHandle);

    /// <summary>The users the sample service returns for List(count).</summary>
    public static List<User> CreateUsers(int count) => new UserService().List(count).GetAwaiter().GetResult();
}
