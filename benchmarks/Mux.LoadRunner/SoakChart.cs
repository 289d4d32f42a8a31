using System.Globalization;
using System.Text;

namespace Mux.LoadRunner;

/// <summary>
/// A soak's memory over time as an SVG: the runner's working set and GC heap after an aggressive
/// full collection, its working set and the memory its GC held from the system (free or not) just
/// before that collection, and each server's resident set, in MiB against seconds, with a dashed
/// line at every server kill. Plain SVG text, like <see cref="ThroughputChart"/>, so
/// docs/benchmarks.md can embed it.
/// </summary>
internal static class SoakChart
{
    private const int Width = 760;
    private const int Height = 360;
    private const int Left = 60;
    private const int Right = 190;
    private const int Top = 34;
    private const int Bottom = 40;

    private static readonly string[] s_serverColours = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"];

    public static string Render(IReadOnlyList<SoakSample> samples, IReadOnlyList<RestartRecord> restarts, int servers, string title)
    {
        double maxX = Math.Max(1, samples[^1].Seconds);
        double maxMib = Math.Max(1, samples.Max(s => Math.Max(Math.Max(s.WorkingSetBytes, s.WorkingSetBeforeGcBytes), s.ServerResidentBytes.DefaultIfEmpty(0).Max())) / (1024.0 * 1024.0));
        double step = NiceStep(maxMib / 5);
        double maxY = Math.Ceiling(maxMib / step) * step;
        int plotWidth = Width - Left - Right;
        int plotHeight = Height - Top - Bottom;
        double X(double seconds) => Left + (seconds / maxX * plotWidth);
        double Y(double mib) => Top + plotHeight - (mib / maxY * plotHeight);

        var svg = new StringBuilder();
        svg.Append(CultureInfo.InvariantCulture, $"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{Width}\" height=\"{Height}\" viewBox=\"0 0 {Width} {Height}\" font-family=\"sans-serif\" font-size=\"12\">\n");
        svg.Append(CultureInfo.InvariantCulture, $"<rect width=\"{Width}\" height=\"{Height}\" fill=\"white\"/>\n");
        svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{Escape(title)}: memory (MiB) over time (s)</text>\n");
        svg.Append(CultureInfo.InvariantCulture, $"<rect x=\"{Left}\" y=\"{Top}\" width=\"{plotWidth}\" height=\"{plotHeight}\" fill=\"none\" stroke=\"#333\"/>\n");
        for (double mib = 0; mib <= maxY + (step / 2); mib += step)
        {
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{Left}\" y1=\"{Y(mib):0.#}\" x2=\"{Left + plotWidth}\" y2=\"{Y(mib):0.#}\" stroke=\"#ddd\"/>\n");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left - 6}\" y=\"{Y(mib) + 4:0.#}\" text-anchor=\"end\">{mib:0.##}</text>\n");
        }

        double xStep = NiceStep(maxX / 6);
        for (double seconds = 0; seconds <= maxX + (xStep / 2); seconds += xStep)
        {
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{X(seconds):0.#}\" y=\"{Top + plotHeight + 16}\" text-anchor=\"middle\">{seconds:0}</text>\n");
        }

        foreach (RestartRecord restart in restarts)
        {
            double x = X(restart.KilledAtSeconds);
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{x:0.#}\" y1=\"{Top}\" x2=\"{x:0.#}\" y2=\"{Top + plotHeight}\" stroke=\"#999\" stroke-dasharray=\"4,4\"><title>server {restart.Server + 1} killed at {restart.KilledAtSeconds:0} s</title></line>\n");
        }

        int legend = 0;
        void Line(string name, string colour, string dash, Func<SoakSample, long> bytes)
        {
            // A sample without a value (a server down at that moment) breaks the line.
            var points = new List<string>();
            for (int i = 0; i <= samples.Count; i++)
            {
                SoakSample? sample = i < samples.Count ? samples[i] : null;
                if (sample is not null && bytes(sample) > 0)
                {
                    points.Add(string.Create(CultureInfo.InvariantCulture, $"{X(sample.Seconds):0.#},{Y(bytes(sample) / (1024.0 * 1024.0)):0.#}"));
                }
                else if (points.Count > 0)
                {
                    svg.Append(CultureInfo.InvariantCulture, $"<polyline points=\"{string.Join(" ", points)}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>\n");
                    points.Clear();
                }
            }

            double legendY = Top + 10 + (legend++ * 18);
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{Left + plotWidth + 12}\" y1=\"{legendY:0.#}\" x2=\"{Left + plotWidth + 36}\" y2=\"{legendY:0.#}\" stroke=\"{colour}\" stroke-width=\"2\"{dash}/>\n");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left + plotWidth + 42}\" y=\"{legendY + 4:0.#}\">{Escape(name)}</text>\n");
        }

        Line("runner working set", "#d62728", "", s => s.WorkingSetBytes);
        Line("(before collection)", "#d62728", " stroke-dasharray=\"2,3\"", s => s.WorkingSetBeforeGcBytes);
        Line("runner GC heap", "#1f77b4", "", s => s.HeapBytes);
        Line("(GC committed, before)", "#1f77b4", " stroke-dasharray=\"2,3\"", s => s.GcCommittedBeforeGcBytes);
        for (int i = 0; i < servers; i++)
        {
            int server = i;
            Line($"server {i + 1} resident set", s_serverColours[i % s_serverColours.Length], "", s => s.ServerResidentBytes[server]);
        }

        svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left + (plotWidth / 2)}\" y=\"{Height - 6}\" text-anchor=\"middle\">seconds (dashed: a server killed)</text>\n");
        svg.Append("</svg>\n");
        return svg.ToString();
    }

    /// <summary>1, 2 or 5 times a power of ten, at least <paramref name="rough"/>.</summary>
    private static double NiceStep(double rough)
    {
        double power = Math.Pow(10, Math.Floor(Math.Log10(Math.Max(rough, 1e-9))));
        foreach (double factor in new[] { 1.0, 2.0, 5.0, 10.0 })
        {
            if (factor * power >= rough)
            {
                return factor * power;
            }
        }

        return 10 * power;
    }

    private static string Escape(string text) =>
        text.Replace("&", "&amp;", StringComparison.Ordinal).Replace("<", "&lt;", StringComparison.Ordinal).Replace(">", "&gt;", StringComparison.Ordinal);
}
