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

if (options.Metrics)
{
    // Before any Mux type runs, so that the listener sees every instrument from its first measurement.
    MetricsTally.Start();
}

if (options.Role == "server")
{
    return await ServerRole.RunAsync(options.ServerSystem!, options.Port, options.BigPayloadMib);
}

if (options.SoakSeconds is not null)
{
    return await SoakMeasurement.RunAsync(options);
}

if (options.Overload)
{
    return await OverloadMeasurement.RunAsync(options);
}

if (options.Streams is not null)
{
    return await StreamMeasurement.RunAsync(options);
}

if (options.Servers is not null)
{
    return await ServersMeasurement.RunAsync(options);
}

if (options.BigPayloadMib is not null)
{
    return await BigPayloadMeasurement.RunAsync(options);
}

return options.RestartServerAfter is null
    ? await Orchestrator.RunAsync(options)
    : await RestartMeasurement.RunAsync(options);
