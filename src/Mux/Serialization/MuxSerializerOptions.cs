using MessagePack;

namespace Mux.Serialization;

/// <summary>Turns the options a user configured into the options a connection serializes with.</summary>
internal static class MuxSerializerOptions
{
    /// <summary>The same as a server's: a server may be hostile too (a public endpoint, a compromised service).</summary>
    public static MessagePackSerializerOptions ForClient(MessagePackSerializerOptions options) => ForPeer(options);

    /// <summary>What a server uses: a server reads what any client sends.</summary>
    public static MessagePackSerializerOptions ForServer(MessagePackSerializerOptions options) => ForPeer(options);

    /// <summary>
    /// <see cref="MessagePackSecurity.TrustedData"/> (no depth limit, dictionaries whose keys an attacker can make collide)
    /// becomes <see cref="MessagePackSecurity.UntrustedData"/>, so a body nested too deep fails its own call instead of
    /// overflowing the stack, which ends the process. Any other security the user configured is kept.
    /// </summary>

    private static MessagePackSerializerOptions ForPeer(MessagePackSerializerOptions options)
    {
        MessagePackSerializerOptions result = options.WithResolver(MuxResolver.Wrap(options.Resolver));
        return ReferenceEquals(result.Security, MessagePackSecurity.TrustedData)
            ? result.WithSecurity(MessagePackSecurity.UntrustedData)
            : result;
    }
}
