#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>

#include "report/html.h"
#include "report/markdown.h"
#include "report/roofline_plot.h"
#include "report/svg.h"
#include "unit/report/fixtures.h"

namespace d2k::report {
namespace {

int count_of(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

/// The <svg id="ID">...</svg> element of a page.
std::string svg_by_id(const std::string& page, const std::string& id) {
  const std::size_t b = page.find("<svg id=\"" + id + "\"");
  if (b == std::string::npos) return {};
  return page.substr(b, page.find("</svg>", b) + 6 - b);
}

int data_points(const std::string& svg) {
  std::smatch m;
  if (!std::regex_search(svg, m, std::regex("data-points=\"([0-9]+)\""))) return -1;
  return std::stoi(m[1]);
}

TEST(Svg, LogAxesPlacePointsAtTheDecades) {
  PlotSpec s;
  s.id = "t";
  s.log_x = s.log_y = true;
  s.points = {{1, 1, "a", "", false}, {100, 100, "b", "", false}};
  const std::string svg = render_svg(s);
  // Default 640x360 with margins left 70, right 150, top 30, bottom 45: the decades 1 and 100 are
  // the axis ends.
  EXPECT_NE(svg.find("cx=\"70.0\" cy=\"315.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("cx=\"490.0\" cy=\"30.0\""), std::string::npos) << svg;
  EXPECT_EQ(data_points(svg), 2);
}

TEST(Svg, NonPositiveOnLogAxesIsDroppedAndCounted) {
  PlotSpec s;
  s.id = "t";
  s.log_x = s.log_y = true;
  s.points = {{1, 1, "a", "", false}, {0, 5, "a", "", false}, {std::nan(""), 1, "a", "", false}};
  const std::string svg = render_svg(s);
  EXPECT_EQ(data_points(svg), 1);
  EXPECT_NE(svg.find("data-dropped=\"2\""), std::string::npos);
  EXPECT_EQ(count_of(svg, "<circle class=\"point\""), 1);
}

TEST(Svg, EscapesText) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST(Html, OneRooflinePerTaskWithOnePointPerTimedTrace) {
  const std::vector<report::Run> runs{testing::run_a()};
  const std::string page = render_html(runs);
  // Counted from the traces here, not from the renderer: PASSED and timed.
  std::map<std::string, int> expect;
  for (const Trace& t : runs[0].traces)
    if (t.status == Status::PASSED && t.performance) ++expect[t.task];
  ASSERT_EQ(expect.size(), 3u);
  EXPECT_EQ(expect["tpch_q6"], 5);  // one library trace failed in run A
  for (auto& [task, n] : expect) {
    const std::string svg = svg_by_id(page, "roofline-" + task);
    ASSERT_FALSE(svg.empty()) << task;
    EXPECT_EQ(data_points(svg), n) << task;
    EXPECT_EQ(count_of(svg, "<circle class=\"point\""), n) << task;
  }
}

TEST(Html, CeilingsComeFromTheTraces) {
  const std::string page = render_html({testing::run_a()});
  const std::string muon = svg_by_id(page, "roofline-muon_optimizer_step");
  EXPECT_NE(muon.find("bf16_tensor 700 Top/s"), std::string::npos);
  EXPECT_NE(muon.find("copy 4.25 TB/s"), std::string::npos);
  EXPECT_NE(muon.find("arithmetic intensity"), std::string::npos);
  // A task without operations is drawn as bandwidth against the copy ceiling.
  const std::string q6 = svg_by_id(page, "roofline-tpch_q6");
  EXPECT_NE(q6.find("achieved bandwidth"), std::string::npos);
  EXPECT_NE(q6.find("copy 4.25 TB/s"), std::string::npos);
  EXPECT_EQ(q6.find("Top/s"), std::string::npos);
}

TEST(Html, SelfContained) {
  const std::string page = render_html({testing::run_a(), testing::run_b()});
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find(" src="), std::string::npos);
  EXPECT_EQ(page.find("url("), std::string::npos);
  // The only address is the SVG namespace, which is a name, not a fetch.
  EXPECT_EQ(count_of(page, "http"), count_of(page, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(Html, TraceTextIsEscaped) {
  report::Run r = testing::run_a();
  r.traces[0].message = "<script>alert(1)</script>";
  r.traces[0].target = "x\"><img src=y>";
  const std::string page = render_html({r});
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)"), std::string::npos);
}

TEST(Html, SummaryLeaderboardAndDetails) {
  const std::string page = render_html({testing::run_a()});
  // library: 6 records, 5 passed (83.3 %); the leaderboard puts expert first (highest mean S).
  EXPECT_NE(page.find("<td class=l>library</td><td>6</td><td>5</td><td>83.3%</td>"), std::string::npos);
  const std::size_t board = page.find("id=\"leaderboard\"");
  ASSERT_NE(board, std::string::npos);
  EXPECT_NE(page.find("<tr><td>1</td><td class=l>run_a</td><td class=l>expert</td>", board), std::string::npos);
  EXPECT_NE(page.find("id=\"fast-p\""), std::string::npos);
  EXPECT_NE(page.find("SM min 1965 MHz"), std::string::npos);
  EXPECT_NE(page.find("INCORRECT_NUMERICAL"), std::string::npos);
  EXPECT_NE(page.find("vs torch eager"), std::string::npos);
}

TEST(Html, ComparisonSection) {
  const report::Run a = testing::run_a(), b = testing::run_b();
  const auto rows = compare_runs(a, b);
  HtmlOptions opt;
  opt.compare = &rows;
  opt.compare_a = a.name, opt.compare_b = b.name;
  const std::string page = render_html({a, b}, opt);
  EXPECT_EQ(count_of(page, "<tr class=changed>"), 1);
  EXPECT_EQ(count_of(page, "class=\"l v-FASTER\""), 1);
  // Two runs: series are told apart by run name.
  EXPECT_NE(page.find("run_b:expert"), std::string::npos);
}

TEST(FastP, CurveIsAShareAndNonIncreasing) {
  const report::Run a = testing::run_a();
  const auto ps = fast_p_grid(4.0, 40);
  const auto ys = fast_p_curve(a.traces, "library", ps);
  ASSERT_EQ(ys.size(), ps.size());
  EXPECT_DOUBLE_EQ(ys[0], 5.0 / 6);  // every passed record is at least 0x naive
  for (std::size_t i = 1; i < ys.size(); ++i) EXPECT_LE(ys[i], ys[i - 1]);
  // library runs at 0.71 / 0.22 = 3.2x naive: fast at p = 3, not at p = 3.5.
  EXPECT_DOUBLE_EQ(ys[30], 5.0 / 6);
  EXPECT_DOUBLE_EQ(ys[35], 0.0);
}

TEST(Markdown, TablesPerTask) {
  const std::string md = render_markdown({testing::run_a()});
  EXPECT_NE(md.find("## Suite summary"), std::string::npos);
  EXPECT_NE(md.find("## Leaderboard"), std::string::npos);
  EXPECT_NE(md.find("## tpch_q6"), std::string::npos);
  EXPECT_NE(md.find("| library | 6 | 5 (83.3%) |"), std::string::npos) << md;
}

TEST(Runs, BadLineNamesFileAndLine) {
  const std::string path = std::string(D2K_BINARY_DIR) + "/bad_traces.jsonl";
  {
    std::ofstream f(path);
    f << "{\"task\":\"t\",\"target\":\"naive\"}\n\n[1,2]\n";
  }
  try {
    read_run(path);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad_traces.jsonl:3: not a trace object"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace d2k::report
