#pragma once
// Charts as inline SVG text, for the report's one self-contained page: lines
// and points over linear or logarithmic axes with ticks at round numbers, and
// horizontal bars. Only what the report draws; no scripts, no fonts to load.
#include <string>
#include <utility>
#include <vector>

namespace tessera::report {

struct Series {
  std::string name;                               // in the legend; empty: none
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite ones are skipped
  bool line = true;                               // joined by a line (else points only)
  bool markers = false;                           // a dot at each point
  std::string color;                              // empty: the palette's next
  bool dashed = false;
};

// A series joined by a line, or drawn as dots only.
Series line_series(std::string name, std::string color = "", bool dashed = false);
Series point_series(std::string name, std::string color = "");

struct Axis {
  std::string label;
  bool log = false;  // base 10; points <= 0 are skipped on a log axis
};

struct Chart {
  std::string title;
  Axis x, y;
  std::vector<Series> series;
  int width = 520, height = 300;
};

// The chart as one <svg> element. An empty chart (no finite point) says so
// inside its frame instead of drawing axes.
std::string render_svg(const Chart& chart);

// Horizontal bars, one per (label, value), in the given order, the value
// written at the end of each bar with `unit`; `highlight` names bars drawn in
// the accent colour (e.g. Tessera among its baselines).
struct BarChart {
  std::string title;
  std::string unit;
  std::vector<std::pair<std::string, double>> bars;
  std::vector<std::string> highlight;
  int width = 520;
};
std::string render_svg(const BarChart& chart);

// Round tick positions covering [lo, hi] (1, 2 or 5 times a power of ten
// apart, about `count` of them); on a log axis, the powers of ten inside.
std::vector<double> ticks(double lo, double hi, int count, bool log);

// `text` with &, <, >, " and ' escaped for HTML and SVG.
std::string escape_xml(const std::string& text);

}  // namespace tessera::report
