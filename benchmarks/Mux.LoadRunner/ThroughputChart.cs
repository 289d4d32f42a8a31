using System.Globalization;
using System.Text;

namespace Mux.LoadRunner;

/// <summary>
/// The run as an SVG chart: one panel per method, calls/s (log scale) against callers (log scale),
/// one line per system. Plain SVG text, so docs/benchmarks.md can embed it and git can diff it.
/// </summary>
internal static class ThroughputChart
{
    private const int Width = 760;
    private const int PanelHeight = 300;
    private const int Left = 70;
    private const int Right = 170;
    private const int Top = 34;
    private const int Bottom = 40;

    // One colour per system, in BenchSystems.Runnable's order; Mux is drawn thicker.
    private static readonly string[] s_colours = ["#d62728", "#7f7f7f", "#bcbd22", "#1f77b4", "#17becf", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"];

    public static string Render(RunReport report)
    {
        List<MethodInfo> methods = [.. report.Methods.Where(m => report.Points.Any(p => p.Method == m.Name && p.Status == "ok"))];
        var svg = new StringBuilder();
        int height = Math.Max(1, methods.Count) * PanelHeight;
        svg.Append(CultureInfo.InvariantCulture, $"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{Width}\" height=\"{height}\" viewBox=\"0 0 {Width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n");
        svg.Append(CultureInfo.InvariantCulture, $"<rect width=\"{Width}\" height=\"{height}\" fill=\"white\"/>\n");
        for (int i = 0; i < methods.Count; i++)
        {
            AppendPanel(svg, report, methods[i], i * PanelHeight);
        }

        svg.Append("</svg>\n");
        return svg.ToString();
    }

    private static void AppendPanel(StringBuilder svg, RunReport report, MethodInfo method, int offsetY)
    {
        List<PointResult> points = [.. report.Points.Where(p => p.Method == method.Name && p.Status == "ok" && p.CallsPerSecond > 0)];
        double minX = Math.Log10(points.Min(p => p.Callers));
        double maxX = Math.Log10(points.Max(p => p.Callers));
        double minY = Math.Floor(Math.Log10(points.Min(p => p.CallsPerSecond)));
        double maxY = Math.Ceiling(Math.Log10(points.Max(p => p.CallsPerSecond)));
        if (maxX <= minX)
        {
            maxX = minX + 1;
        }

        if (maxY <= minY)
        {
            maxY = minY + 1;
        }

        int plotWidth = Width - Left - Right;
        int plotHeight = PanelHeight - Top - Bottom;
        double X(double callers) => Left + ((Math.Log10(callers) - minX) / (maxX - minX) * plotWidth);
        double Y(double callsPerSecond) => offsetY + Top + plotHeight - ((Math.Log10(callsPerSecond) - minY) / (maxY - minY) * plotHeight);

        svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left}\" y=\"{offsetY + 20}\" font-size=\"14\" font-weight=\"bold\">{Escape(method.Name)}: {Escape(method.Call)}, calls/s against callers on one connection</text>\n");
        svg.Append(CultureInfo.InvariantCulture, $"<rect x=\"{Left}\" y=\"{offsetY + Top}\" width=\"{plotWidth}\" height=\"{plotHeight}\" fill=\"none\" stroke=\"#333\"/>\n");
        for (double decade = minY; decade <= maxY; decade++)
        {
            double y = Y(Math.Pow(10, decade));
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{Left}\" y1=\"{y:0.#}\" x2=\"{Left + plotWidth}\" y2=\"{y:0.#}\" stroke=\"#ddd\"/>\n");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left - 6}\" y=\"{y + 4:0.#}\" text-anchor=\"end\">{FormatCount(Math.Pow(10, decade))}</text>\n");
        }

        foreach (int callers in points.Select(p => p.Callers).Distinct().Order())
        {
            double x = X(callers);
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{x:0.#}\" y1=\"{offsetY + Top}\" x2=\"{x:0.#}\" y2=\"{offsetY + Top + plotHeight}\" stroke=\"#eee\"/>\n");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{x:0.#}\" y=\"{offsetY + Top + plotHeight + 16}\" text-anchor=\"middle\">{callers}</text>\n");
        }

        svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left + (plotWidth / 2)}\" y=\"{offsetY + PanelHeight - 6}\" text-anchor=\"middle\">callers</text>\n");

        int legend = 0;
        for (int s = 0; s < BenchSystems.Runnable.Length; s++)
        {
            string system = BenchSystems.Runnable[s];
            List<PointResult> line = [.. points.Where(p => p.System == system).OrderBy(p => p.Callers)];
            if (line.Count == 0)
            {
                continue;
            }

            string colour = s_colours[s % s_colours.Length];
            string width = system == BenchSystems.Mux ? "3" : "1.5";
            string path = string.Join(" ", line.Select(p => string.Create(CultureInfo.InvariantCulture, $"{X(p.Callers):0.#},{Y(p.CallsPerSecond):0.#}")));
            svg.Append(CultureInfo.InvariantCulture, $"<polyline points=\"{path}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\"/>\n");
            foreach (PointResult p in line)
            {
                svg.Append(CultureInfo.InvariantCulture, $"<circle cx=\"{X(p.Callers):0.#}\" cy=\"{Y(p.CallsPerSecond):0.#}\" r=\"3\" fill=\"{colour}\"><title>{Escape(system)}, {p.Callers} callers: {p.CallsPerSecond:N0} calls/s</title></circle>\n");
            }

            double legendY = offsetY + Top + 10 + (legend++ * 18);
            svg.Append(CultureInfo.InvariantCulture, $"<line x1=\"{Left + plotWidth + 12}\" y1=\"{legendY:0.#}\" x2=\"{Left + plotWidth + 36}\" y2=\"{legendY:0.#}\" stroke=\"{colour}\" stroke-width=\"{width}\"/>\n");
            svg.Append(CultureInfo.InvariantCulture, $"<text x=\"{Left + plotWidth + 42}\" y=\"{legendY + 4:0.#}\">{Escape(system)}</text>\n");
        }
    }

    private static string FormatCount(double value) => value switch
    {
        >= 1_000_000 => string.Create(CultureInfo.InvariantCulture, $"{value / 1_000_000:0.#}M"),
        >= 1_000 => string.Create(CultureInfo.InvariantCulture, $"{value / 1_000:0.#}K"),
        _ => value.ToString("0", CultureInfo.InvariantCulture),
    };

    private static string Escape(string text) =>
        text.Replace("&", "&amp;", StringComparison.Ordinal).Replace("<", "&lt;", StringComparison.Ordinal).Replace(">", "&gt;", StringComparison.Ordinal);
}
