using Mux.LoadRunner;

RunnerOptions options;
try
{
    options = RunnerOptions.Parse(args);
}
catch (ArgumentException ex)
{
    Console.Error.WriteLine(ex.Message);
    Console.Error.WriteLine(RunnerOptions.Usage);
    return 2;
}

if (options.Help)
{
    Console.WriteLine(RunnerOptions.Usage);
    return 0;
}

return options.Role == "server"
    ? await ServerRole.RunAsync(options.ServerSystem!, options.Port)
    : await Orchestrator.RunAsync(options);
