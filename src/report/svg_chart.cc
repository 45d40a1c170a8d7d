#include "report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::report {

namespace {

// Colours that stay apart for readers with the common colour-vision deficiencies.
const char* const kPalette[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"};
constexpr int kLeft = 64, kRight = 16, kTop = 30, kBottom = 44;

std::string number(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.0e}", v);
  return fmt::format("{:.3g}", v);
}

// A tick's label with as many decimals as the ticks' spacing needs, so that
// neighbours never read alike (11.35 and 11.4, not 11.4 and 11.4).
std::string tick_label(double v, double step, bool log) {
  if (log || v == 0 || !(step > 0)) return number(v);
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.1e}", v);
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", v, decimals);
}

struct Scale {
  double lo, hi;
  bool log;
  double pixel_lo, pixel_hi;
  double operator()(double v) const {
    const double f = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return pixel_lo + f * (pixel_hi - pixel_lo);
  }
};

bool usable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

// The range an axis shows for values in [lo, hi]: a log axis whole decades,
// a linear one from zero where the values are all on one side of it.
std::pair<double, double> axis_range(double lo, double hi, bool log) {
  if (log) {
    double a = std::pow(10.0, std::floor(std::log10(lo))), b = std::pow(10.0, std::ceil(std::log10(hi)));
    if (a == b) b = a * 10;
    return {a, b};
  }
  if (lo > 0 && lo < hi * 0.6) lo = 0;
  if (hi < 0) hi = 0;
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    return {lo - pad, hi + pad};
  }
  const std::vector<double> t = ticks(lo, hi, 5, false);
  const double step = t.size() > 1 ? t[1] - t[0] : (hi - lo);
  return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

}  // namespace

Series line_series(std::string name, std::string color, bool dashed) {
  Series s;
  s.name = std::move(name);
  s.color = std::move(color);
  s.dashed = dashed;
  return s;
}

Series point_series(std::string name, std::string color) {
  Series s;
  s.name = std::move(name);
  s.line = false;
  s.markers = true;
  s.color = std::move(color);
  return s;
}

std::string escape_xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

std::vector<double> ticks(double lo, double hi, int count, bool log) {
  std::vector<double> out;
  if (!(hi > lo)) return {lo};
  if (log) {
    const int a = static_cast<int>(std::ceil(std::log10(lo) - 1e-9)),
              b = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    for (int e = a; e <= b; ++e) out.push_back(std::pow(10.0, e));
    if (out.size() < 3)  // within about a decade: 2 and 5 times the powers too
      for (int e = a - 1; e <= b; ++e)
        for (double m : {2.0, 5.0}) {
          const double v = m * std::pow(10.0, e);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
        }
    std::sort(out.begin(), out.end());
    return out;
  }
  const double raw = (hi - lo) / std::max(1, count);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) {
      step = m * power;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return out;
}

std::string render_svg(const Chart& chart) {
  const int w = chart.width, h = chart.height;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n",
      w, h, w, h);
  svg += fmt::format("<title>{}</title>\n", escape_xml(chart.title));
  svg += fmt::format("<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n", w / 2,
                     escape_xml(chart.title));
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const Series& s : chart.series)
    for (const auto& [x, y] : s.points)
      if (usable(x, chart.x.log) && usable(y, chart.y.log)) {
        xlo = std::min(xlo, x), xhi = std::max(xhi, x), ylo = std::min(ylo, y), yhi = std::max(yhi, y);
      }
  // Named series get a legend row under the x axis's label, clear of the data.
  const bool legend =
      std::any_of(chart.series.begin(), chart.series.end(), [](const Series& s) { return !s.name.empty(); });
  const int bottom = kBottom + (legend ? 16 : 0);
  const int px0 = kLeft, px1 = w - kRight, py0 = h - bottom, py1 = kTop;
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", px0, py1,
                     px1 - px0, py0 - py1);
  if (!std::isfinite(xlo)) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">no data</text>\n</svg>\n", w / 2,
                       h / 2);
    return svg;
  }
  const auto [x0, x1] = axis_range(xlo, xhi, chart.x.log);
  const auto [y0, y1] = axis_range(ylo, yhi, chart.y.log);
  const Scale sx{x0, x1, chart.x.log, double(px0), double(px1)}, sy{y0, y1, chart.y.log, double(py0), double(py1)};
  const std::vector<double> xt = ticks(x0, x1, 6, chart.x.log), yt = ticks(y0, y1, 5, chart.y.log);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 0, ystep = yt.size() > 1 ? yt[1] - yt[0] : 0;
  for (double t : xt) {
    const double px = sx(t);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#eee\"/>", px, py0, px, py1);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px, py0 + 14,
                       tick_label(t, xstep, chart.x.log));
  }
  for (double t : yt) {
    const double py = sy(t);
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#eee\"/>", px0, py, px1, py);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", px0 - 4, py + 4,
                       tick_label(t, ystep, chart.y.log));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (px0 + px1) / 2, py0 + 30,
                     escape_xml(chart.x.label));
  svg += fmt::format("<text x=\"14\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}</text>\n",
                     (py0 + py1) / 2, (py0 + py1) / 2, escape_xml(chart.y.label));
  int legend_x = px0;
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    const std::string color = s.color.empty() ? kPalette[i % std::size(kPalette)] : s.color;
    std::string path;
    for (const auto& [x, y] : s.points) {
      if (!usable(x, chart.x.log) || !usable(y, chart.y.log)) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", sx(x), sy(y));
      if (s.markers || !s.line)
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.2\" fill=\"{}\" fill-opacity=\"0.6\"/>", sx(x),
                           sy(y), color);
    }
    if (s.line && !path.empty())
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\"{}/>\n", path, color,
                         s.dashed ? " stroke-dasharray=\"5,3\"" : "");
    if (!s.name.empty()) {
      const int ly = h - 8;
      svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"3\" fill=\"{}\"/>", legend_x, ly - 4, color);
      svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", legend_x + 14, ly, escape_xml(s.name));
      legend_x += 14 + 7 * static_cast<int>(s.name.size()) + 16;  // about 7 px a character at 11 px
    }
  }
  svg += "</svg>\n";
  return svg;
}

std::string render_svg(const BarChart& chart) {
  constexpr int kRow = 20;
  // Room for the longest label (about 6.5 px a character at 11 px), within reason.
  size_t longest = 0;
  for (const auto& bar : chart.bars) longest = std::max(longest, bar.first.size());
  const int kLabel = std::clamp(static_cast<int>(longest * 6.5) + 10, 60, chart.width / 2);
  const int w = chart.width, h = kTop + kRow * static_cast<int>(chart.bars.size()) + 10;
  double top = 0;
  for (const auto& [label, value] : chart.bars)
    if (std::isfinite(value)) top = std::max(top, value);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n<title>{}</title>\n",
      w, h, w, h, escape_xml(chart.title));
  svg += fmt::format("<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n", w / 2,
                     escape_xml(chart.title));
  const double room = w - kLabel - 80;
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const auto& [label, value] = chart.bars[i];
    const int y = kTop + kRow * static_cast<int>(i);
    const bool accent = std::find(chart.highlight.begin(), chart.highlight.end(), label) != chart.highlight.end();
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLabel - 6, y + 13, escape_xml(label));
    if (!std::isfinite(value) || top <= 0) continue;
    const double len = room * value / top;
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>", kLabel, y + 3, len,
                       kRow - 6, accent ? kPalette[1] : kPalette[0]);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{} {}</text>\n", kLabel + len + 4, y + 13, number(value),
                       escape_xml(chart.unit));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tessera::report
