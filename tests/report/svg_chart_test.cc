// The report's charts: ticks at round numbers covering the data, one drawn
// point per finite value (none for what a log axis cannot show), text
// escaped, and an empty chart that says so.
#include "report/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace tessera::report {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgChart, TicksAreRoundNumbersCoveringTheRange) {
  EXPECT_EQ(ticks(0, 10, 5, false), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(ticks(0, 1000, 4, false), (std::vector<double>{0, 500, 1000}));
  const std::vector<double> small = ticks(0.013, 0.061, 5, false);
  ASSERT_GE(small.size(), 3u);
  EXPECT_NEAR(small[1] - small[0], 0.01, 1e-12);
  EXPECT_GE(small.front(), 0.013 - 1e-12);
  EXPECT_LE(small.back(), 0.061 + 1e-12);
  EXPECT_EQ(ticks(1, 1000, 5, true), (std::vector<double>{1, 10, 100, 1000}));
  // Within a decade a log axis takes 2 and 5 times the powers too.
  EXPECT_EQ(ticks(10, 100, 5, true), (std::vector<double>{10, 20, 50, 100}));
}

TEST(SvgChart, EveryFinitePointIsDrawnAndTheRestSkipped) {
  const double inf = std::numeric_limits<double>::infinity();
  Chart c{"GFLOPS <against> trials", {"trials"}, {"GFLOPS", true}, {}};
  c.series.push_back({"best", {{1, 10}, {2, 20}, {3, inf}, {4, 0}, {5, 40}}, true, true});
  const std::string svg = render_svg(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // 0 has no place on the log axis, inf nowhere: three markers, one polyline of three points.
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_EQ(count(svg, "<polyline"), 1u);
  const size_t points = svg.find("points=\"");
  ASSERT_NE(points, std::string::npos);
  const std::string list = svg.substr(points + 8, svg.find('"', points + 8) - points - 8);
  EXPECT_EQ(count(list, ","), 3u) << list;
  EXPECT_NE(svg.find("GFLOPS &lt;against&gt; trials"), std::string::npos);
  EXPECT_EQ(svg.find("<against>"), std::string::npos);
  EXPECT_NE(svg.find(">best</text>"), std::string::npos);
}

TEST(SvgChart, AChartWithoutDataSaysSo) {
  Chart c{"nothing", {"x"}, {"y"}, {{"s", {{1, std::nan("")}}}}};
  const std::string svg = render_svg(c);
  EXPECT_NE(svg.find("no data"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 0u);
}

TEST(SvgChart, BarsAreProportionalAndHighlighted) {
  BarChart b{"latency", "ms", {{"tessera", 5}, {"onnxruntime", 10}}, {"tessera"}};
  const std::string svg = render_svg(b);
  EXPECT_EQ(count(svg, "<rect"), 2u);
  const size_t first = svg.find("width=\"", svg.find("<rect"));
  const size_t second = svg.find("width=\"", svg.find("<rect", svg.find("<rect") + 1));
  const double w1 = std::stod(svg.substr(first + 7)), w2 = std::stod(svg.substr(second + 7));
  EXPECT_NEAR(w2 / w1, 2.0, 0.01);
  EXPECT_NE(svg.find(">5 ms</text>"), std::string::npos);
  EXPECT_NE(svg.find(">10 ms</text>"), std::string::npos);
  EXPECT_EQ(escape_xml("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

}  // namespace
}  // namespace tessera::report
