#include "report/roofline_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "report/svg.h"

namespace d2k::report {

namespace {

double total_ops(const Roofline& r) {
  double s = 0;
  for (auto& [unit, ops] : r.flops) s += ops;
  return s;
}

std::string rate(double v, const char* unit) {
  static const char* p[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (v >= 1000 && i + 1 < int(std::size(p))) v /= 1000, ++i;
  return fmt::format("{:.3g} {}{}", v, p[i], unit);
}

}  // namespace

bool plottable(const Trace& t) {
  return t.status == Status::PASSED && t.performance && t.performance->median_us > 0 && t.roofline &&
         t.roofline->bytes > 0;
}

std::string roofline_svg(const std::string& task, const std::vector<Run>& runs) {
  // Operations or bandwidth: a task is plotted by operations when any of its traces counts some.
  bool by_ops = false;
  for (const Run& run : runs)
    for (const Trace& t : run.traces)
      if (t.task == task && plottable(t) && total_ops(*t.roofline) > 0) by_ops = true;

  PlotSpec plot;
  plot.id = "roofline-" + task;
  plot.log_x = plot.log_y = true;
  plot.width = 720;
  plot.height = 400;
  plot.title = task + (by_ops ? ": roofline" : ": achieved bandwidth");
  plot.x_label = by_ops ? "arithmetic intensity (operations / DRAM byte)" : "compulsory DRAM bytes";
  plot.y_label = by_ops ? "achieved operations/s" : "achieved bytes/s";

  double xmin = std::numeric_limits<double>::infinity(), xmax = 0;
  std::map<std::string, double> peaks;  // ceiling label -> value, first seen
  std::map<std::string, double> bws;
  for (std::size_t ri = 0; ri < runs.size(); ++ri)
    for (const Trace& t : runs[ri].traces) {
      const Run& run = runs[ri];
      if (t.task != task || !plottable(t)) continue;
      const Roofline& r = *t.roofline;
      const double s = t.performance->median_us * 1e-6, ops = total_ops(r);
      if (by_ops && ops <= 0) {
        plot.points.push_back({std::nan(""), std::nan(""), t.target, "", false});  // counted as dropped
        continue;
      }
      const double x = by_ops ? ops / r.bytes : r.bytes, y = by_ops ? ops / s : r.bytes / s;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      std::string axes;
      for (auto& [k, v] : t.axes) axes += fmt::format("{}{}={}", axes.empty() ? "" : " ", k, v);
      plot.points.push_back({x, y, runs.size() > 1 ? run.name + ":" + t.target : t.target,
                             fmt::format("{} {} [{}]: {:.2f} us, {:.1f}% of SOL, {}", run.name, t.target, axes,
                                         t.performance->median_us, r.pct_sol,
                                         by_ops ? rate(y, "op/s") : rate(y, "B/s")),
                             ri % 2 == 1});
      if (r.copy_bw > 0) bws.emplace(fmt::format("copy {}", rate(r.copy_bw, "B/s")), r.copy_bw);
      for (auto& [unit, peak] : r.peaks)
        if (peak > 0) peaks.emplace(fmt::format("{} {}", unit, rate(peak, "op/s")), peak);
    }
  if (!(xmin <= xmax)) return render_svg(plot);  // nothing placed: an empty frame says so
  // Ceilings across a decade either side of the points.
  const double lo = xmin / 10, hi = xmax * 10;
  // The points' own x range is sampled too, so that the axes stretch to show each ceiling there.
  auto line = [&](const std::string& label, auto y_of) {
    plot.lines.push_back({{{lo, y_of(lo)}, {xmin, y_of(xmin)}, {xmax, y_of(xmax)}, {hi, y_of(hi)}}, label, "", false});
  };
  for (auto& [label, bw] : bws) {
    if (by_ops) line(label, [bw = bw](double x) { return bw * x; });
    else line(label, [bw = bw](double) { return bw; });
  }
  if (by_ops)
    for (auto& [label, peak] : peaks) line(label, [p = peak](double) { return p; });
  return render_svg(plot);
}

}  // namespace d2k::report
