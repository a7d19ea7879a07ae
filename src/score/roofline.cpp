#include "score/roofline.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <stdexcept>

namespace d2k::score {

namespace {

void require_time(const char* what, double t) {
  if (!std::isfinite(t) || t <= 0) throw std::invalid_argument(fmt::format("{} must be a finite time > 0 (got {})", what, t));
}

std::string fmt_time(double s) {
  if (s >= 1) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

}  // namespace

CostInputs cost_inputs(const std::map<std::string, double>& flops, double bytes, double in, double out) {
  CostInputs c{flops, bytes};
  if (in >= 0 && out >= 0 && in + out > 0) c.write_bytes = bytes * out / (in + out);
  return c;
}

SolTime sol_time(const CostInputs& cost, const Ceilings& c) {
  if (!std::isfinite(cost.bytes) || cost.bytes < 0)
    throw std::invalid_argument(fmt::format("cost bytes must be finite and >= 0 (got {})", cost.bytes));
  if (cost.bytes > 0 && !(c.copy_bw > 0))
    throw std::invalid_argument(fmt::format("ceilings for '{}' ({}) have no copy bandwidth", c.device.name, c.source));
  SolTime s;
  if (cost.write_bytes >= 0 && cost.bytes > 0) {
    const double w = std::min(cost.write_bytes, cost.bytes);
    const measure::MemoryFloor f = measure::memory_floor(cost.bytes - w, w, c);
    s.memory_s = f.t_s;
    s.memory_model = f.model;
  } else {
    s.memory_s = cost.bytes > 0 ? cost.bytes / c.copy_bw : 0;
    s.memory_model = "copy";
  }
  s.t_sol_s = s.memory_s;
  s.bound = "memory";
  for (const auto& [unit, ops] : cost.flops) {
    if (!std::isfinite(ops) || ops < 0)
      throw std::invalid_argument(fmt::format("cost flops['{}'] must be finite and >= 0 (got {})", unit, ops));
    if (ops == 0) continue;
    const double t = ops / c.peak_of(unit);
    s.compute_s[unit] = t;
    if (t > s.t_sol_s) {
      s.t_sol_s = t;
      s.bound = unit;
    }
  }
  return s;
}

double percent_of_sol(double t_s, double t_sol_s) {
  require_time("time", t_s);
  return 100.0 * t_sol_s / t_s;
}

SolScore sol_score(double t, double t_sol, double t_naive) {
  require_time("time", t);
  require_time("naive time", t_naive);
  if (!std::isfinite(t_sol) || t_sol < 0) throw std::invalid_argument(fmt::format("T_SOL must be finite and >= 0 (got {})", t_sol));
  SolScore r;
  if (t_naive <= t_sol) {
    // Naive at (or under) SOL: no room between the anchors; score by speed vs naive alone.
    r.degenerate = true;
    r.below_sol = t < t_sol;
    r.score = 1.0 / (1.0 + t / t_naive);
    return r;
  }
  if (t <= t_sol) {
    r.below_sol = t < t_sol;
    r.score = 1.0;
    return r;
  }
  r.score = 1.0 / (1.0 + (t - t_sol) / (t_naive - t_sol));
  return r;
}

FloorVerdict physical_floor_check(double t, const CostInputs& cost, const Ceilings& c, const FloorOptions& o) {
  require_time("time", t);
  if (!(o.margin >= 0 && o.margin < 1)) throw std::invalid_argument(fmt::format("floor margin must be in [0, 1) (got {})", o.margin));
  const SolTime sol = sol_time(cost, c);
  FloorVerdict v;
  v.t_s = t;
  v.t_sol_s = sol.t_sol_s;
  v.ratio = sol.t_sol_s > 0 ? t / sol.t_sol_s : 0;
  double mem_bytes = cost.bytes;
  if (o.discount_l2) mem_bytes = std::max(0.0, cost.bytes - static_cast<double>(c.l2_bytes));
  double bound_s = mem_bytes > 0 ? mem_bytes / c.copy_bw : 0;
  v.bound = "memory";
  for (const auto& [unit, ts] : sol.compute_s)
    if (ts > bound_s) {
      bound_s = ts;
      v.bound = unit;
    }
  v.floor_s = bound_s * (1.0 - o.margin);
  v.below_floor = v.floor_s > 0 && t < v.floor_s;
  if (v.floor_s <= 0) {
    v.message = fmt::format("no floor: the {} term is 0 (bytes within the L2 and no operations)", v.bound);
  } else if (v.below_floor) {
    v.message = fmt::format("time {} is {:.2f}x the speed of light {} ({}-bound); floor {} with margin {:.2f}: "
                            "below what the hardware can do",
                            fmt_time(t), v.ratio, fmt_time(sol.t_sol_s), v.bound, fmt_time(v.floor_s), o.margin);
  } else {
    v.message = fmt::format("time {} is {:.2f}x the speed of light {} ({}-bound); floor {}",
                            fmt_time(t), v.ratio, fmt_time(sol.t_sol_s), v.bound, fmt_time(v.floor_s));
  }
  return v;
}

void to_json(nlohmann::json& j, const SolTime& s) {
  j = nlohmann::json{{"t_sol_s", s.t_sol_s},
                     {"memory_s", s.memory_s},
                     {"memory_model", s.memory_model},
                     {"compute_s", s.compute_s},
                     {"bound", s.bound}};
}

void to_json(nlohmann::json& j, const SolScore& s) {
  j = nlohmann::json{{"score", s.score}, {"below_sol", s.below_sol}, {"degenerate", s.degenerate}};
}

void to_json(nlohmann::json& j, const FloorVerdict& v) {
  j = nlohmann::json{{"below_floor", v.below_floor}, {"t_s", v.t_s}, {"t_sol_s", v.t_sol_s},
                     {"floor_s", v.floor_s},         {"ratio", v.ratio}, {"bound", v.bound},
                     {"message", v.message}};
}

}  // namespace d2k::score
