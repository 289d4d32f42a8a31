using Mux.Diagnostics;

namespace Mux.Tests.Diagnostics;

/// <summary>The rpc.response.status_code values: every status by its name, and tagging a call
/// allocates nothing (the names are the runtime's cached strings).</summary>
public class CallStatusTests
{
    [Fact]
    public void Of_NamesEveryStatus_AndUnknownCodesAsUnknown()
    {
        foreach (MuxStatusCode code in Enum.GetValues<MuxStatusCode>())
        {
            Assert.Equal(code.ToString(), CallStatus.Of(code));
        }

        Assert.Equal(CallStatus.Ok, CallStatus.Of(MuxStatusCode.Ok));
        Assert.Equal(CallStatus.Canceled, CallStatus.Of(MuxStatusCode.Canceled));
        Assert.Equal("DeadlineExceeded", CallStatus.Of(MuxStatusCode.DeadlineExceeded));
        Assert.Equal("Unknown", CallStatus.Of((MuxStatusCode)9999));
    }

    [Fact]
    public void Of_AllocatesNothing()
    {
        MuxStatusCode[] codes = Enum.GetValues<MuxStatusCode>();
        foreach (MuxStatusCode code in codes)
        {
            CallStatus.Of(code); // Warms the runtime's name cache.
        }

        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int round = 0; round < 100; round++)
        {
            foreach (MuxStatusCode code in codes)
            {
                CallStatus.Of(code);
            }
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
    }
}
