using System.Collections.Concurrent;

namespace Mux.Tests.Callbacks;

public sealed class CallbackHub : ICallbackHub
{
    public ConcurrentQueue<MuxRemoteClient> Registered { get; } = new();

    public async Task<int> SumOfClientAnswers(int count, MuxCallContext? context = null)
    {
        IClientSide client = context!.GetClientProxy<IClientSide>();
        int sum = 0;
        for (int i = 1; i <= count; i++)
        {
            sum += await client.Transform(i);
        }

        return sum;
    }

    public async Task<string> StreamFromClient(MuxCallContext? context = null)
    {
        IClientCounter counter = context!.GetClientProxy<IClientCounter>();
        try
        {
            await foreach (int item in counter.Count(3))
            {
                return $"item {item} arrived";
            }

            return "the stream ended empty";
        }
        catch (NotSupportedException ex)
        {
            return $"{ex.GetType().FullName}: {ex.Message}";
        }
    }

    public Task Register(MuxCallContext? context = null)
    {
        Registered.Enqueue(context!.Client);
        return Task.CompletedTask;
    }
}
