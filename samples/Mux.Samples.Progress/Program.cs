using Mux.Samples.Progress;

// A server that reports progress to its callers by calling them back on their own connection
// (MuxCallContext.GetClientProxy on the server, MuxClient.AddService on the client). Exits when done.
await ProgressDemo.RunAsync(Console.Out);
