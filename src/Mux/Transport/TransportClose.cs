namespace Mux.Transport;

/// <summary>The close both byte transports (socket and stream) share: let the send loop finish
/// what was flushed, give up on it after a grace period if the peer stops reading, then shut the
/// transport and wait for the receive loop.</summary>
internal static class TransportClose
{
    /// <summary>How long a close waits for the peer to take what was flushed before dropping it.</summary>
    private static readonly TimeSpan s_sendGracePeriod = TimeSpan.FromSeconds(5);

    public static async ValueTask DrainAndShutdownAsync(Task? sendLoop, Task? receiveLoop, Action shutdown, TimeProvider clock)
    {
        if (sendLoop is not null)
        {
            try
            {
                await sendLoop.WaitAsync(s_sendGracePeriod, clock).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                shutdown();
                await sendLoop.ConfigureAwait(false);
            }
        }

        shutdown();
        if (receiveLoop is not null)
        {
            await receiveLoop.ConfigureAwait(false);
        }
    }
}
