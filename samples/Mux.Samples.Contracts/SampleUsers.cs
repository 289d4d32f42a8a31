namespace Mux.Samples.Contracts;

/// <summary>The canned users of the BeetleX XRPC sample, shared by every server of the samples and
/// benchmarks so that they all return the same bytes.</summary>
public static class SampleUsers
{
    public static List<User> Create(int count)
    {
        var users = new List<User>(count);
        for (int i = 0; i < count; i++)
        {
            users.Add(new User
            {
                ID = i,
                Name = "user" + i,
                City = "GuangZhou",
                EMail = "henryfan@msn.com",
                Remark = "http://ikende.com",
            });
        }

        return users;
    }
}
