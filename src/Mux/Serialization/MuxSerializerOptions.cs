using MessagePack;

namespace Mux.Serialization;

/// <summary>Turns the options a user configured into the options a connection serializes with.</summary>
internal static class MuxSerializerOptions
{
    /// <summary>What a client uses: the user's options with generated formatters consulted first.</summary>
    public static MessagePackSerializerOptions ForClient(MessagePackSerializerOptions options) =>
        options.WithResolver(MuxResolver.Wrap(options.Resolver));

    /// <summary>
    /// What a server uses: as a client, but a server reads what any peer sends, so the trusting
    /// default (<see cref="MessagePackSecurity.TrustedData"/>: no depth limit, dictionaries whose
    /// keys an attacker can make collide) becomes <see cref="MessagePackSecurity.UntrustedData"/>.
    /// Any other security the user configured is kept.
    /// </summary>
    public static MessagePackSerializerOptions ForServer(MessagePackSerializerOptions options)
    {
        MessagePackSerializerOptions result = ForClient(options);
        return ReferenceEquals(result.Security, MessagePackSecurity.TrustedData)
            ? result.WithSecurity(MessagePackSecurity.UntrustedData)
            : result;
    }
}
