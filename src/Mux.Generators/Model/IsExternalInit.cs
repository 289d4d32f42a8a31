namespace System.Runtime.CompilerServices;

/// <summary>Lets records and init accessors compile for netstandard2.0, which lacks this type.</summary>
internal static class IsExternalInit
{
}
