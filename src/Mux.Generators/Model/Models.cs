namespace Mux.Generators.Model;

/// <summary>What a service method returns.</summary>
internal enum ReturnKind
{
    Task,
    TaskOfT,
    ValueTask,
    ValueTaskOfT,

    /// <summary>IAsyncEnumerable&lt;T&gt;: the server streams items of T.</summary>
    Stream,
}

/// <summary>How a deserialized member reaches the new object.</summary>
internal enum MemberAssignment
{
    /// <summary>Written but not read back (no setter and no constructor parameter): skipped when read.</summary>
    None,

    /// <summary>Passed to the constructor.</summary>
    Constructor,

    /// <summary>An init-only member: set in the object initializer when the array has it.</summary>
    Initializer,

    /// <summary>A required member: always set in the object initializer.</summary>
    RequiredInitializer,

    /// <summary>Set after construction when the array has it.</summary>
    Setter,
}

/// <summary>One formatter to register: <c>TryRegister&lt;TypeArgument&gt;(new Formatter())</c>.</summary>
internal sealed record FormatterRegistration(string TypeArgument, string Formatter);

/// <summary>A parameter of a service method.</summary>
/// <param name="Name">The identifier, escaped if it is a keyword.</param>
/// <param name="Type">The fully qualified type, with nullable annotations.</param>
/// <param name="IsCancellationToken">Whether this is the call's token (not serialized).</param>
/// <param name="IsParams">Whether the parameter is declared <c>params</c>.</param>
/// <param name="IsCallContext">Whether this is the call's MuxCallContext (filled by the dispatcher, not serialized).</param>
/// <param name="StreamItemType">For an <c>IAsyncEnumerable&lt;T&gt;</c> parameter (the client's stream, not serialized with the arguments), T; null otherwise.</param>
internal sealed record ParameterModel(string Name, string Type, bool IsCancellationToken, bool IsParams, bool IsCallContext = false, string? StreamItemType = null)
{
    /// <summary>Whether the value travels in the Request's argument array: neither the call's token
    /// nor its MuxCallContext, which the server's dispatcher fills and a proxy ignores, nor the
    /// client's stream, which travels as frames of the call.</summary>
    public bool IsArgument => !IsCancellationToken && !IsCallContext && StreamItemType is null;
}

/// <summary>A method of a service (declared on the service or on one of its base interfaces).</summary>
/// <param name="DeclaringInterface">The fully qualified interface that declares the method.</param>
/// <param name="Name">The method's identifier, escaped if it is a keyword.</param>
/// <param name="DisplayName">The name the server reports in logs and errors.</param>
/// <param name="Id">The method id.</param>
/// <param name="ReturnKind">Which of the four task types the method returns.</param>
/// <param name="ReturnType">The fully qualified return type.</param>
/// <param name="ResultType">The T of Task&lt;T&gt;, ValueTask&lt;T&gt; or IAsyncEnumerable&lt;T&gt;; null otherwise.</param>
/// <param name="Parameters">All parameters, the CancellationToken included.</param>
internal sealed record MethodModel(
    string DeclaringInterface,
    string Name,
    string DisplayName,
    uint Id,
    ReturnKind ReturnKind,
    string ReturnType,
    string? ResultType,
    EquatableArray<ParameterModel> Parameters);

/// <summary>Everything needed to emit one [MuxService] interface's proxy, dispatcher and registration
/// (<c>Experimental</c>: the ids of the [Experimental] APIs the generated file uses, to suppress).</summary>
internal sealed record ServiceModel(
    string HintName,
    string InterfaceType,
    string ServiceName,
    EquatableArray<MethodModel> Methods,
    EquatableArray<FormatterRegistration> Registrations,
    EquatableArray<ObjectModel> ExternalObjects,
    EquatableArray<string> Experimental);

/// <summary>A serialized member of a [MessagePackObject] type.</summary>
/// <param name="Key">The member's index in the MessagePack array (its position, for a map).</param>
/// <param name="Name">The member's identifier, escaped if it is a keyword.</param>
/// <param name="Type">The fully qualified member type, with nullable annotations.</param>
/// <param name="InitialValue">What the member's local starts as when the array is too short.</param>
/// <param name="Assignment">How the value read reaches the new object.</param>
/// <param name="StringKey">The member's key in the MessagePack map; null for an array member.</param>
internal sealed record ObjectMemberModel(int Key, string Name, string Type, string InitialValue, MemberAssignment Assignment, string? StringKey);

/// <summary>One case of a [Union] type: the key written before the value, and the case's type.</summary>
internal sealed record UnionCaseModel(int Key, string Type);

/// <summary>Everything needed to emit one [MessagePackObject] (or [Union]) type's formatter.</summary>
/// <param name="HintName">The generated file's name.</param>
/// <param name="Type">The fully qualified type, without annotations.</param>
/// <param name="IsValueType">Whether the type is a struct (never nil).</param>
/// <param name="Length">The MessagePack array length (the largest key plus one), or the map's entry count.</param>
/// <param name="Members">The serialized members, by key.</param>
/// <param name="ConstructorKeys">The keys of the members passed to the constructor, in parameter order.</param>
/// <param name="Registrations">Formatters for the collection, enum and nullable types of the members.</param>
/// <param name="IsMap">Whether the members are written as a map with string keys (else an array).</param>
/// <param name="UnionCases">For a [Union] type, its cases (and no members); empty otherwise.</param>
/// <param name="Experimental">The ids of the [Experimental] APIs the formatter uses, to suppress.</param>
internal sealed record ObjectModel(
    string HintName,
    string Type,
    bool IsValueType,
    int Length,
    EquatableArray<ObjectMemberModel> Members,
    EquatableArray<int> ConstructorKeys,
    EquatableArray<FormatterRegistration> Registrations,
    bool IsMap,
    EquatableArray<UnionCaseModel> UnionCases,
    EquatableArray<string> Experimental);

/// <summary>The result of looking at one [MuxService] interface: a model unless it has errors.</summary>
internal sealed record ServiceResult(ServiceModel? Model, EquatableArray<DiagnosticInfo> Diagnostics);

/// <summary>The result of looking at one [MessagePackObject] or [Union] type: a model unless it has errors.</summary>
internal sealed record ObjectResult(ObjectModel? Model, EquatableArray<DiagnosticInfo> Diagnostics);
