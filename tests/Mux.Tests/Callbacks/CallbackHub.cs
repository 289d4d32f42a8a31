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

    public async Task<int[]> CountOnClient(int count, int take, MuxCallContext? context = null)
    {
        var items = new List<int>();
        await foreach (int item in context!.GetClientProxy<IClientCounter>().Count(count))
        {
            items.Add(item);
            if (items.Count == take)
            {
                break; // Stops the client's producer: the call is cancelled.
            }
        }

        return [.. items];
    }

    public Task Register(MuxCallContext? context = null)
    {
        Registered.Enqueue(context!.Client);
        return Task.CompletedTask;
    }
}
