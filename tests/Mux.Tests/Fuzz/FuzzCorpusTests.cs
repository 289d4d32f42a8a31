using Mux.Fuzz;

namespace Mux.Tests.Fuzz;

/// <summary>
/// Every input in fuzz/corpus (the fuzzer's starting points) and fuzz/regressions (what fuzzing
/// found, once fixed) goes through the frames and server targets on every test run: the frame
/// reader rejects nothing with an unexpected exception, and the server answers and closes without
/// hanging. Every input in fuzz/corpus-client and fuzz/regressions/client-* goes through the client
/// target, and a short fixed run of mutations of the client's seeds stands in for fuzzing it.
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

    public static TheoryData<string> Seeds()
    {
        var seeds = new TheoryData<string>();
        foreach (string name in SeedCorpus.Create().Keys)
        {
            seeds.Add(name);
        }

        return seeds;
    }

    [Theory]
    [MemberData(nameof(Seeds))]
    public void TodaysSeeds_AreAnsweredByTheServer(string name)
    {
        // The files in fuzz/corpus were written by an earlier build and stay valid inputs when the
        // handshake gains settings; the seeds as the current protocol writes them are replayed too,
        // so a protocol change that breaks them fails here rather than silently weakening fuzzing.
        byte[] seed = SeedCorpus.Create()[name];

        FuzzTargets.Frames(seed);
        Assert.True(FuzzTargets.ServerAnswer(seed) > 0, "The server sent nothing back to a valid handshake.");
    }

    public static TheoryData<string> ClientInputs()
    {
        string fuzz = Path.Combine(RepositoryRoot(), "fuzz");
        var inputs = new TheoryData<string>();
        IEnumerable<string> files = Directory.EnumerateFiles(Path.Combine(fuzz, "corpus-client"))
            .Concat(Directory.EnumerateFiles(Path.Combine(fuzz, "regressions"), "client-*"));
        foreach (string file in files.Where(f => !Path.GetFileName(f).StartsWith('.')).Order(StringComparer.Ordinal))
        {
            inputs.Add(Path.GetRelativePath(fuzz, file));
        }

        return inputs;
    }

    [Theory]
    [MemberData(nameof(ClientInputs))]
    public void Client_HandlesTheInput_AsDesigned(string input)
    {
        ClientRun run = ClientFuzzTarget.Run(File.ReadAllBytes(Path.Combine(RepositoryRoot(), "fuzz", input)), ClientFuzzTarget.QuietTime);

        // Every corpus input starts with a valid HelloAck.
        if (input.StartsWith("corpus", StringComparison.Ordinal))
        {
            Assert.True(run.Connected, "The client did not take a valid HelloAck.");
        }
    }

    public static TheoryData<string> ClientSeeds()
    {
        var seeds = new TheoryData<string>();
        foreach (string name in SeedCorpus.CreateClient().Keys)
        {
            seeds.Add(name);
        }

        return seeds;
    }

    [Theory]
    [MemberData(nameof(ClientSeeds))]
    public void TodaysClientSeeds_DoWhatTheySay(string name)
    {
        // As for the server's seeds: a protocol change that breaks them fails here. A generous quiet
        // time, so a loaded machine's pause does not end the server's calls before they answer.
        ClientRun run = ClientFuzzTarget.Run(SeedCorpus.CreateClient()[name], TimeSpan.FromSeconds(1));

        Assert.True(run.Connected, "The client did not take a valid HelloAck.");
        (int succeeded, int answered) = name switch
        {
            "ack-answers" or "ack-goaway" => (ClientFuzzTarget.Calls.Count, 0),
            "ack-fragments" => (1, 0),
            "ack-server-calls" => (0, 4),
            _ => (0, 0),
        };
        Assert.Equal((succeeded, answered), (run.CallsSucceeded, run.ServerCallsAnswered));
    }

    /// <summary>
    /// A short, fixed run of fuzzing inside the suite: each client seed mutated the way a fuzzer
    /// would (bits flipped, bytes set to MessagePack's edge values, cuts, repeats, announced lengths
    /// of 2^32-1, a body nested 200,000 levels deep in each place a server's bytes are read), from a
    /// fixed random seed per case, so a failure names an input that fails again.
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(4)]
    [InlineData(5)]
    [InlineData(6)]
    public void Client_SurvivesMutationsOfTheSeeds(int round)
    {
        var random = new Random(round);
        foreach ((string name, byte[] seed) in SeedCorpus.CreateClient().OrderBy(p => p.Key, StringComparer.Ordinal))
        {
            (string mutation, byte[] input) = ClientMutations.Mutate(seed, random);
            try
            {
                ClientFuzzTarget.Run(input, TimeSpan.FromMilliseconds(20));
            }
            catch (Exception ex)
            {
                throw new Xunit.Sdk.XunitException($"Seed {name}, {mutation} ({input.Length} bytes: {Convert.ToHexString(input.AsSpan(0, Math.Min(input.Length, 512)))}): {ex}");
            }
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
