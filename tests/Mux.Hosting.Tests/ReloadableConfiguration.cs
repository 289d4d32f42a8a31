using Microsoft.Extensions.Configuration;

namespace Mux.Hosting.Tests;

/// <summary>In-memory configuration whose whole content a test replaces at run time, raising the
/// reload token as a changed appsettings.json or a Kubernetes config map would.</summary>
public sealed class ReloadableConfiguration : ConfigurationProvider, IConfigurationSource
{
    public ReloadableConfiguration(params (string Key, string Value)[] values) => Data = ToData(values);

    public IConfigurationProvider Build(IConfigurationBuilder builder) => this;

    /// <summary>Replaces every key with <paramref name="values"/> and signals the change.</summary>
    public void Replace(params (string Key, string Value)[] values)
    {
        Data = ToData(values);
        OnReload();
    }

    private static Dictionary<string, string?> ToData((string Key, string Value)[] values)
    {
        var data = new Dictionary<string, string?>(StringComparer.OrdinalIgnoreCase);
        foreach ((string key, string value) in values)
        {
            data[key] = value;
        }

        return data;
    }
}
