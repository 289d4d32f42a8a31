using MessagePack;

namespace Mux.Serialization;

/// <summary>Turns the options a user configured into the options a connection serializes with.</summary>
internal static class MuxSerializerOptions
{
    /// <summary>
    /// What a client uses: the same as a server (<see cref="ForServer"/>). A client reads what its
    /// server sends (results, stream items, the arguments of the server's calls), and a server may
    /// be hostile too: a public endpoint, one instance of a pool, a compromised service.
    /// </summary>
    public static MessagePackSerializerOptions ForClient(MessagePackSerializerOptions options) => ForPeer(options);

    /// <summary>What a server uses: a server reads what any client sends.</summary>
    public static MessagePackSerializerOptions ForServer(MessagePackSerializerOptions options) => ForPeer(options);

    /// <summary>
    /// The user's options with generated formatters consulted first, read as untrusted: the trusting
    /// default (<see cref="MessagePackSecurity.TrustedData"/>: no depth limit, dictionaries whose
    /// keys an attacker can make collide) becomes <see cref="MessagePackSecurity.UntrustedData"/>,
    /// so a body nested deeper than its limit fails its own call instead of overflowing the stack
    /// (which ends the process). Any other security the user configured is kept.
    /// </summary>
    private static MessagePackSerializerOptions ForPeer(MessagePackSerializerOptions options)
    {
        MessagePackSerializerOptions result = options.WithResolver(MuxResolver.Wrap(options.Resolver));
        return ReferenceEquals(result.Security, MessagePackSecurity.TrustedData)
            ? result.WithSecurity(MessagePackSecurity.UntrustedData)
            : result;
    }
}
