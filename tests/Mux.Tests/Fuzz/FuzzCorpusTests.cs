using Mux.Fuzz;

namespace Mux.Tests.Fuzz;

/// <summary>
/// Every input in fuzz/corpus (the fuzzer's starting points) and fuzz/regressions (what fuzzing
/// found, once fixed) goes through both fuzz targets on every test run: the frame reader rejects
/// nothing with an unexpected exception, and the server answers and closes without hanging.
/// </summary>
public sealed class FuzzCorpusTests
{
    public static TheoryData<string> Inputs()
    {
        string fuzz = Path.Combine(RepositoryRoot(), "fuzz");
        var inputs = new TheoryData<string>();
        foreach (string folder in new[] { "corpus", "regressions" })
        {
            foreach (string file in Directory.EnumerateFiles(Path.Combine(fuzz, folder)).Where(f => !Path.GetFileName(f).StartsWith('.')).Order(StringComparer.Ordinal))
            {
                inputs.Add(Path.GetRelativePath(fuzz, file));
            }
        }

        return inputs;
    }

    [Theory]
    [MemberData(nameof(Inputs))]
    public void FrameReader_HandlesTheInput_AsDesigned(string input)
    {
        FuzzTargets.Frames(File.ReadAllBytes(Path.Combine(RepositoryRoot(), "fuzz", input)));
    }

    [Theory]
    [MemberData(nameof(Inputs))]
    public void Server_AnswersTheInput_AndCloses(string input)
    {
        long answered = FuzzTargets.ServerAnswer(File.ReadAllBytes(Path.Combine(RepositoryRoot(), "fuzz", input)));

        // Every corpus input starts with a valid Hello, so the server at least sent its HelloAck.
        if (input.StartsWith("corpus", StringComparison.Ordinal))
        {
            Assert.True(answered > 0, "The server sent nothing back to a valid handshake.");
        }
    }

    [Fact]
    public void TheCorpus_IsWhatTheSeedWriterWrites()
    {
        // The seeds are derived from the current protocol; if it changes, rewrite them with
        // `dotnet run -c Release --project fuzz/Mux.Fuzz -- seed fuzz/corpus` so fuzzing starts past the handshake.
        string corpus = Path.Combine(RepositoryRoot(), "fuzz", "corpus");
        foreach ((string name, byte[] bytes) in SeedCorpus.Create())
        {
            Assert.Equal(Convert.ToHexString(bytes), Convert.ToHexString(File.ReadAllBytes(Path.Combine(corpus, name))));
        }
    }

    private static string RepositoryRoot()
    {
        for (DirectoryInfo? directory = new(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "Mux.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException($"No Mux.sln above {AppContext.BaseDirectory}.");
    }
}
