using Mux.Tests.Infrastructure;

namespace Mux.Tests.Server;

/// <summary>
/// Work a handler leaves running reads its call's <see cref="MuxCallContext.CancellationToken"/>
/// while the call finishes: it gets the call's token, or a cancelled one once the call is over,
/// never an ObjectDisposedException from the source the finish has just disposed.
/// </summary>
public sealed class ContextTokenAtFinishTests
{
    // Calls whose finish races a reader. The old code's window (between the source's Dispose and
    // the end of the call) was hit in each of three runs of 2000 calls, each failing within half a
    // second, a fraction of the calls this makes.
    private const int Calls = 1000;

    [Fact]
    public async Task WorkTheHandlerLeftRunning_ReadsTheContextsTokenAsTheCallFinishes_AndNeverGetsObjectDisposedException()
    {
        var service = new LeavesWorkRunning();
        await using var server = new MuxServer(new MuxServerOptions());
        server.AddService<ILeavesWorkRunning>(service);
        await using MuxClient client = await server.ConnectInMemoryAsync().WaitAsync(TestHost.Patience);
        ILeavesWorkRunning proxy = client.CreateProxy<ILeavesWorkRunning>();

        for (int i = 0; i < Calls; i++)
        {
            await proxy.Start().WaitAsync(TestHost.Patience);
            Exception? failure = await service.LastReader.WaitAsync(TestHost.Patience);
            Assert.Null(failure);
        }
    }

    [MuxService]
    public interface ILeavesWorkRunning
    {
        /// <summary>Takes its token, starts a reader of its context's token, and returns.</summary>
        Task Start(MuxCallContext? context = null);
    }

    private sealed class LeavesWorkRunning : ILeavesWorkRunning
    {
        private Task<Exception?> _lastReader = Task.FromResult<Exception?>(null);

        /// <summary>What the last call's reader failed with; null when it never did.</summary>
        public Task<Exception?> LastReader => Volatile.Read(ref _lastReader);

        public Task Start(MuxCallContext? context = null)
        {
            _ = context!.CancellationToken; // The call's source exists: its finish disposes it.
            var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            Volatile.Write(ref _lastReader, Task.Factory.StartNew(() => Read(context, started), CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default));
            return started.Task;
        }

        /// <summary>Reads the token until the call is over, and once more after.</summary>
        private static Exception? Read(MuxCallContext context, TaskCompletionSource started)
        {
            try
            {
                started.SetResult(); // The handler returns: its call finishes while this reads.
                while (context.IsCallRunning)
                {
                    _ = context.CancellationToken;
                }

                Assert.True(context.CancellationToken.IsCancellationRequested);
                return null;
            }
            catch (Exception ex)
            {
                return ex;
            }
        }
    }
}
