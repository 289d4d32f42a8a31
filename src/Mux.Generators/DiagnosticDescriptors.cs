using Microsoft.CodeAnalysis;

namespace Mux.Generators;

/// <summary>Every diagnostic the Mux generator reports. Each message says how to fix the problem.</summary>
internal static class DiagnosticDescriptors
{
    private const string Category = "Mux";

    public static readonly DiagnosticDescriptor UnsupportedReturnType = new(
        id: "MUX001",
        title: "Mux service method has an unsupported return type",
        messageFormat: "Method '{0}' of Mux service '{1}' returns {2}. A Mux service method must return Task, Task<T>, ValueTask or ValueTask<T>, or IAsyncEnumerable<T> to stream its results; {3}.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor ByRefParameter = new(
        id: "MUX002",
        title: "Mux service method has a ref, out or in parameter",
        messageFormat: "Parameter '{0}' of method '{1}' is passed by reference ({2}). Arguments travel over the network by value: remove the modifier and return any output in the result.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor GenericMethod = new(
        id: "MUX003",
        title: "Mux service method is generic",
        messageFormat: "Method '{0}' of Mux service '{1}' is generic. Mux needs concrete types to generate the call: remove the type parameters, or add one method per type.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor PropertyNotSupported = new(
        id: "MUX004",
        title: "Mux service declares a property",
        messageFormat: "Property '{0}' of Mux service '{1}' is not supported. Only methods can be called remotely: replace it with a method such as 'ValueTask<T> Get{0}()'.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor EventNotSupported = new(
        id: "MUX005",
        title: "Mux service declares an event",
        messageFormat: "Event '{0}' of Mux service '{1}' is not supported. Mux calls go from client to server only: remove the event, or poll with a method.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor MethodIdCollision = new(
        id: "MUX006",
        title: "Two methods of a Mux service have the same method id",
        messageFormat: "Methods '{0}' and '{1}' of Mux service '{2}' have the same method id 0x{3}. {4}.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor MultipleCancellationTokens = new(
        id: "MUX007",
        title: "Mux service method takes more than one CancellationToken",
        messageFormat: "Method '{0}' takes more than one CancellationToken. A call has exactly one token: remove parameter '{1}'.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor GenericService = new(
        id: "MUX008",
        title: "Mux service interface is generic",
        messageFormat: "Mux service '{0}' is generic. Method ids and proxies need a concrete contract: remove the type parameters, or declare a non-generic interface per type.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor NoUsableConstructor = new(
        id: "MUX009",
        title: "MessagePack object has no usable constructor",
        messageFormat: "Mux cannot create '{0}' when it reads one. Add a public parameterless constructor (with settable members), or a public constructor whose parameters match the [Key] members by name (mark it [SerializationConstructor] if there are several).",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor NoFormatter = new(
        id: "MUX010",
        title: "No MessagePack formatter for a contract type",
        messageFormat: "MessagePack cannot serialize '{0}', used by {1}: mark it [MessagePackObject] and its members [Key(n)] (or [IgnoreMember]). If your own resolver in SerializerOptions formats it, suppress MUX010 for it.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Warning,
        isEnabledByDefault: true);

    public static readonly DiagnosticDescriptor InvalidDeclaration = new(
        id: "MUX011",
        title: "Mux cannot generate code for a declaration",
        messageFormat: "Mux cannot generate code for '{0}'. {1}.",
        category: Category,
        defaultSeverity: DiagnosticSeverity.Error,
        isEnabledByDefault: true);
}
