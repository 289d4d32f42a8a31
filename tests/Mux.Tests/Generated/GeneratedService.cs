namespace Mux.Tests.Generated;

/// <summary>The server side of <see cref="IGeneratedService"/>; records what it saw.</summary>
public sealed class GeneratedService : IGeneratedService, Nesting.IInternalService
{
    private int _touches;
    private int _lastReset = -1;

    public TaskCompletionSource<int> WaitStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public TaskCompletionSource<int> CancellationObserved { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public int LastReset => Volatile.Read(ref _lastReset);

    public Task<string> Hello(string name) => Task.FromResult($"Hello, {name}!");

    public Task Touch()
    {
        Interlocked.Increment(ref _touches);
        return Task.CompletedTask;
    }

    public Task<int> TouchCount() => Task.FromResult(Volatile.Read(ref _touches));

    public async ValueTask Reset(int value)
    {
        await Task.Yield();
        Volatile.Write(ref _lastReset, value);
    }

    public ValueTask<long> Multiply(int a, long b) => new(a * b);

    public Task<string> Describe(string text, int number, double real, bool flag, Guid id, DateTime when) =>
        Task.FromResult(FormattableString.Invariant($"{text}|{number}|{real}|{flag}|{id}|{when:O}"));

    public Task<Order> Roundtrip(Order order)
    {
        order.Customer += " (seen)";
        order.Items.Add(new LineItem("server", 1, 0.01m));
        return Task.FromResult(order);
    }

    public Task<Order?> Find(Guid id) => Task.FromResult<Order?>(null);

    public ValueTask<Point> Move(Point point, int dx, int dy) => new(new Point(point.X + dx, point.Y + dy));

    public Task<Versioned> Rename(Versioned value, string name) =>
        Task.FromResult(new Versioned { Id = value.Id, Name = name, Ratio = value.Ratio * 2, NotSerialized = "server" });

    public Task<List<Dictionary<string, int[]>>?> Nested(List<Dictionary<string, int[]>>? input, Priority[] priorities, Priority? maybe)
    {
        if (input is null)
        {
            return Task.FromResult<List<Dictionary<string, int[]>>?>(null);
        }

        input.Add(new Dictionary<string, int[]> { ["priorities"] = priorities.Select(p => p == Priority.High ? 2 : 1).ToArray(), ["maybe"] = maybe is null ? [] : [(int)Math.Min((long)maybe.Value, 3)] });
        return Task.FromResult<List<Dictionary<string, int[]>>?>(input);
    }

    public Task<int> Sum(int a, int b) => Task.FromResult(a + b);

    public Task<int> Sum(int a, int b, int c) => Task.FromResult(a + b + c);

    public Task<string> Sum(string a, string b) => Task.FromResult(a + b);

    public async Task WaitForCancellation(int id, CancellationToken cancellationToken)
    {
        WaitStarted.TrySetResult(id);
        try
        {
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
        catch (OperationCanceledException)
        {
            CancellationObserved.TrySetResult(id);
            throw;
        }
    }

    public ValueTask<int> Fail(string message) => throw new ArgumentException(message);

    public Task<Everything?> Echo(Everything? value) => Task.FromResult(value);

    public Task<Profile> EchoProfile(Profile profile, Setting setting)
    {
        profile.Name += "/" + setting.Key + "=" + setting.Value;
        return Task.FromResult(profile);
    }

    public Task<Money> EchoMoney(Money money) => Task.FromResult(new Money(money.Amount * 2, money.Currency));

    public Task<int> Depth(Node? node)
    {
        int depth = 0;
        for (Node? current = node; current is not null; current = current.Child)
        {
            depth++;
        }

        return Task.FromResult(depth);
    }

    public Task<List<Shape?>> EchoShapes(List<Shape?> shapes) => Task.FromResult(shapes);

    public Task<byte[]?> EchoBytes(byte[]? bytes, ReadOnlyMemory<byte> memory) =>
        Task.FromResult(bytes is null ? null : (byte[]?)[.. bytes, .. memory.Span]);

    public Task<int> Twice(int value) => Task.FromResult(value * 2);
}
