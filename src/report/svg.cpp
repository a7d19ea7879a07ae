#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace d2k::report {

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string series_colour(const std::string& series) {
  static const std::map<std::string, std::string> fixed{
      {"naive", "#d62728"},       {"expert", "#1f77b4"},        {"library", "#2ca02c"},
      {"torch_eager", "#ff7f0e"}, {"torch_compile", "#9467bd"}, {"solution", "#17becf"}};
  const std::string target = series.substr(series.find(':') + 1);  // npos + 1 == 0: the whole name
  if (auto it = fixed.find(target); it != fixed.end()) return it->second;
  static const char* spare[] = {"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173"};
  return spare[std::hash<std::string>{}(target) % std::size(spare)];
}

namespace {

/// One axis: data range -> pixels, linear or log10, with "nice" ticks.
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;     // in data units (log: positive)
  double p0 = 0, p1 = 1;     // pixels

  double t(double v) const { return log ? std::log10(v) : v; }
  double px(double v) const { return p0 + (t(v) - t(lo)) / (t(hi) - t(lo)) * (p1 - p0); }
  bool valid(double v) const { return std::isfinite(v) && (!log || v > 0); }

  void fit(double mn, double mx) {
    if (!(mn <= mx)) mn = mx = log ? 1 : 0;  // nothing to fit
    if (log) {
      lo = std::pow(10, std::floor(std::log10(mn)));
      hi = std::pow(10, std::ceil(std::log10(mx)));
      if (hi <= lo) hi = lo * 10;
    } else {
      const double span = mx - mn > 0 ? mx - mn : std::max(std::abs(mx), 1.0);
      lo = std::min(0.0, mn);  // linear charts here are shares and speedups: keep zero in view
      hi = mx + 0.05 * span;
    }
  }

  std::vector<double> ticks() const {
    std::vector<double> out;
    if (log) {
      for (double v = lo; v <= hi * 1.0001; v *= 10) out.push_back(v);
    } else {
      const double raw = (hi - lo) / 5, mag = std::pow(10, std::floor(std::log10(raw)));
      const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
      for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) out.push_back(v);
    }
    return out;
  }
};

std::string tick_label(double v, bool log) {
  if (log) {
    static const char* prefix[] = {"", "k", "M", "G", "T", "P", "E"};
    const int e = int(std::lround(std::log10(v)));
    if (e >= 0 && e / 3 < int(std::size(prefix))) return fmt::format("{:g}{}", std::pow(10, e % 3), prefix[e / 3]);
    if (e >= -3) return fmt::format("{:g}", std::pow(10, e));
    return fmt::format("1e{}", e);
  }
  return fmt::format("{:g}", std::abs(v) < 1e-12 ? 0.0 : v);
}

/// Liang-Barsky clip of the segment (x0,y0)-(x1,y1) to the box; false when it misses.
bool clip(double& x0, double& y0, double& x1, double& y1, double xl, double xh, double yl, double yh) {
  double u0 = 0, u1 = 1;
  const double dx = x1 - x0, dy = y1 - y0;
  const double p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - xl, xh - x0, y0 - yl, yh - y0};
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;
      continue;
    }
    const double r = q[i] / p[i];
    if (p[i] < 0) u0 = std::max(u0, r);
    else u1 = std::min(u1, r);
    if (u0 > u1) return false;
  }
  x1 = x0 + u1 * dx, y1 = y0 + u1 * dy;
  x0 = x0 + u0 * dx, y0 = y0 + u0 * dy;
  return true;
}

/// Axes fitted to the points, then widened by up to a decade (log) to show reference lines
/// that run just outside.
void fit_axes(const PlotSpec& s, Axis& x, Axis& y) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  double xmn = inf, xmx = -inf, ymn = inf, ymx = -inf;
  for (const PlotPoint& p : s.points) {
    if (!x.valid(p.x) || !y.valid(p.y)) continue;
    xmn = std::min(xmn, p.x), xmx = std::max(xmx, p.x);
    ymn = std::min(ymn, p.y), ymx = std::max(ymx, p.y);
  }
  for (const PlotLine& l : s.lines)
    for (auto [lx, ly] : l.xy) {
      if (!l.series.empty() && x.valid(lx) && y.valid(ly)) {  // curves count fully
        xmn = std::min(xmn, lx), xmx = std::max(xmx, lx);
        ymn = std::min(ymn, ly), ymx = std::max(ymx, ly);
      }
    }
  // Ceilings (lines without a series): their y range at the points' x range stretches y.
  for (const PlotLine& l : s.lines)
    if (l.series.empty())
      for (auto [lx, ly] : l.xy)
        if (y.valid(ly) && lx >= xmn && lx <= xmx) ymn = std::min(ymn, ly), ymx = std::max(ymx, ly);
  x.fit(xmn, xmx);
  y.fit(ymn, ymx);
}

}  // namespace

std::string render_svg(const PlotSpec& s) {
  const double left = 70, right = 150, top = 30, bottom = 45;
  Axis x{s.log_x, 0, 1, left, s.width - right}, y{s.log_y, 0, 1, double(s.height) - bottom, top};
  fit_axes(s, x, y);

  int drawn = 0, dropped = 0;
  std::string body;
  // Frame, ticks and grid.
  body += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#fff" stroke="#999"/>)", left, top,
                      x.p1 - x.p0, y.p0 - y.p1);
  for (double v : x.ticks()) {
    const double px = x.px(v);
    body += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" stroke="#eee"/>)"
                        R"(<text x="{0:.1f}" y="{3}" font-size="11" text-anchor="middle">{4}</text>)",
                        px, top, y.p0, y.p0 + 15, tick_label(v, x.log));
  }
  for (double v : y.ticks()) {
    const double py = y.px(v);
    body += fmt::format(R"(<line x1="{1}" y1="{0:.1f}" x2="{2}" y2="{0:.1f}" stroke="#eee"/>)"
                        R"(<text x="{3}" y="{4:.1f}" font-size="11" text-anchor="end">{5}</text>)",
                        py, left, x.p1, left - 5, py + 4, tick_label(v, y.log));
  }
  body += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="12" text-anchor="middle">{}</text>)", (x.p0 + x.p1) / 2,
                      s.height - 8, html_escape(s.x_label));
  body += fmt::format(R"svg(<text x="14" y="{0:.1f}" font-size="12" text-anchor="middle" transform="rotate(-90 14 {0:.1f})">{1}</text>)svg",
                      (y.p0 + y.p1) / 2, html_escape(s.y_label));
  body += fmt::format(R"(<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>)", left, html_escape(s.title));

  // Lines: ceilings dashed grey with a label at the right end; curves in their series' colour.
  for (const PlotLine& l : s.lines) {
    std::string pts;
    double lx = 0, ly = 0;
    for (std::size_t i = 0; i + 1 < l.xy.size(); ++i) {
      auto [ax, ay] = l.xy[i];
      auto [bx, by] = l.xy[i + 1];
      if (!x.valid(ax) || !x.valid(bx) || !y.valid(ay) || !y.valid(by)) continue;
      double x0 = x.t(ax), y0 = y.t(ay), x1 = x.t(bx), y1 = y.t(by);
      if (!clip(x0, y0, x1, y1, x.t(x.lo), x.t(x.hi), y.t(y.lo), y.t(y.hi))) continue;
      auto back = [](double v, bool lg) { return lg ? std::pow(10, v) : v; };
      const double px0 = x.px(back(x0, x.log)), py0 = y.px(back(y0, y.log));
      lx = x.px(back(x1, x.log)), ly = y.px(back(y1, y.log));
      pts += fmt::format("{}{:.1f},{:.1f} {:.1f},{:.1f}", pts.empty() ? "" : " ", px0, py0, lx, ly);
    }
    if (pts.empty()) continue;
    const bool curve = !l.series.empty();
    const char* dash = !curve ? R"( stroke-dasharray="6 3")" : l.dashed ? R"( stroke-dasharray="4 3")" : "";
    body += fmt::format(R"(<polyline class="{}" points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>)",
                        curve ? "curve" : "ceiling", pts, curve ? series_colour(l.series) : "#777", curve ? 2 : 1.5,
                        dash);
    // Inside the frame, right-aligned above the line's right end: the legend owns the margin.
    if (!l.label.empty())
      body += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="10" fill="#555" text-anchor="end">{}</text>)",
                          lx - 4, ly - 4, html_escape(l.label));
  }

  // Points, then the legend of every series seen.
  std::vector<std::string> series;
  std::map<std::string, bool> ring;  // series drawn hollow or dashed
  auto note_series = [&](const std::string& name, bool hollow) {
    if (!name.empty() && std::find(series.begin(), series.end(), name) == series.end()) series.push_back(name);
    ring[name] = hollow;
  };
  for (const PlotPoint& p : s.points) {
    if (!x.valid(p.x) || !y.valid(p.y)) {
      ++dropped;
      continue;
    }
    ++drawn;
    note_series(p.series, p.hollow);
    const std::string c = series_colour(p.series);
    body += fmt::format(R"(<circle class="point" cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}" stroke="{}" stroke-width="{}"><title>{}</title></circle>)",
                        x.px(p.x), y.px(p.y), p.hollow ? "none" : c, p.hollow ? c : "#000", p.hollow ? 2 : 0.5,
                        html_escape(p.tooltip));
  }
  for (const PlotLine& l : s.lines) note_series(l.series, l.dashed);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const double ly = top + 10 + 16 * i, lx = x.p1 + 12;
    const std::string c = series_colour(series[i]);
    body += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="10" height="10" fill="{}" stroke="{}" stroke-width="2"/>)"
                        R"(<text x="{:.1f}" y="{:.1f}" font-size="11">{}</text>)",
                        lx, ly - 9, ring[series[i]] ? "#fff" : c, c, lx + 14, ly, html_escape(series[i]));
  }
  return fmt::format(R"(<svg id="{}" class="plot" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" )"
                     R"(viewBox="0 0 {} {}" data-points="{}" data-dropped="{}" role="img" aria-label="{}">{}</svg>)",
                     html_escape(s.id), s.width, s.height, s.width, s.height, drawn, dropped, html_escape(s.title), body);
}

}  // namespace d2k::report
