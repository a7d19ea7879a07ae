#pragma once
/// Inline SVG charts written by d2k for the HTML report: no script, no fonts or files fetched.
/// One chart type: an x-y plot on linear or log10 axes with points, polylines and labelled
/// horizontal/sloped reference lines (the roofline's ceilings, the fast_p curves).
#include <string>
#include <vector>

namespace d2k::report {

/// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string html_escape(const std::string& s);

struct PlotPoint {
  double x = 0, y = 0;
  std::string series;   ///< legend entry; the colour follows it
  std::string tooltip;  ///< <title> of the marker
  bool hollow = false;  ///< drawn as a ring (a second run's points beside the first's)
};

/// A line through data-space points (drawn clipped to the plot area).
struct PlotLine {
  std::vector<std::pair<double, double>> xy;
  std::string label;    ///< written at the line's right end
  std::string series;   ///< when set, the series' colour (a curve); else grey dashed (a ceiling)
  bool dashed = false;  ///< a curve drawn dashed (a second run's curve beside the first's)
};

struct PlotSpec {
  std::string id;       ///< the <svg> element's id
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 640, height = 360;
  std::vector<PlotPoint> points;
  std::vector<PlotLine> lines;
};

/// The chart as one <svg> element. Axis ranges cover every point (lines are clipped to them,
/// widened to include ceilings when they are near). Each point is a <circle class="point">, and
/// the element carries data-points="N" with N the number of points, so a reader (or the browser
/// test) can check what was drawn. Non-finite or non-positive-on-log values are left out and
/// counted in data-dropped.
std::string render_svg(const PlotSpec& spec);

/// A colour per series name, the same in every chart: fixed for the built-in targets, from a
/// hash of the name otherwise. "run:target" takes the target's colour (runs differ by marker).
std::string series_colour(const std::string& series);

}  // namespace d2k::report
