#include "report/html.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/roofline_plot.h"
#include "report/svg.h"

namespace d2k::report {

namespace {

using E = std::string;  // an HTML fragment

E esc(const std::string& s) { return html_escape(s); }
E opt_fmt(const std::optional<double>& v, const char* spec) {
  return v ? fmt::format(fmt::runtime(spec), *v) : E("&ndash;");
}

std::string axes_label(const Trace& t) {
  std::string s;
  for (auto& [k, v] : t.axes) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s;
}

std::string status_cell(const Trace& t) {
  std::string s(status_name(t.status));
  if (!t.rule.empty()) s += "(" + t.rule + ")";
  return fmt::format(R"(<span class="st {}">{}</span>)", t.status == Status::PASSED ? "ok" : "bad", esc(s));
}

E page_head(const std::string& title) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}}
h1{{font-size:1.6em}} h2{{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.8em}} h3{{margin-top:1.4em}}
table{{border-collapse:collapse;margin:.6em 0;font-size:.88em}} #compare-table{{font-size:.78em}}
th,td{{border:1px solid #ccc;padding:.25em .55em;text-align:right}} th{{background:#f3f3f3}}
td.l,th.l{{text-align:left}} tr.changed td{{background:#fff3cd}}
.st.ok{{color:#1a7f37}} .st.bad{{color:#c62828;font-weight:bold}}
.v-FASTER{{color:#1a7f37;font-weight:bold}} .v-SLOWER{{color:#c62828;font-weight:bold}} .v-STATUS_CHANGED{{background:#ffcc80;font-weight:bold}}
details{{margin:.3em 0}} summary{{cursor:pointer}} .msg{{white-space:pre-wrap;font-family:monospace;font-size:.85em;max-width:900px;text-align:left}}
.note{{color:#555;font-size:.9em}} svg.plot{{display:block;margin:.5em 0}}
</style></head><body>
<h1>{}</h1>
)",
                     esc(title), esc(title));
}

/// Runs and where they ran.
E section_runs(const std::vector<Run>& runs) {
  E out = "<h2 id=\"runs\">Runs</h2>\n<table><tr><th class=l>run</th><th>records</th><th class=l>device</th>"
          "<th class=l>GPU</th><th>CUDA runtime</th><th class=l>d2k</th><th class=l>date</th><th class=l>ceilings</th></tr>\n";
  for (const Run& r : runs) {
    nlohmann::json env = nlohmann::json::object();
    std::set<std::string> ceilings;
    for (const Trace& t : r.traces) {
      if (env.empty() && t.environment.is_object()) env = t.environment;
      if (t.roofline && !t.roofline->ceilings_source.empty()) ceilings.insert(t.roofline->ceilings_source);
    }
    auto s = [&](const char* k) {
      return env.contains(k) ? esc(env[k].is_string() ? env[k].get<std::string>() : env[k].dump()) : E("&ndash;");
    };
    std::string gpu = "&ndash;";
    if (env.contains("gpu") && env["gpu"].is_object()) gpu = esc(env["gpu"].value("uuid", std::string("?")));
    std::string ceil;
    for (auto& c : ceilings) ceil += (ceil.empty() ? "" : ", ") + c;
    out += fmt::format("<tr><td class=l>{}</td><td>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td>"
                       "<td class=l>{}</td><td class=l>{}</td><td class=l>{}</td></tr>\n",
                       esc(r.name), r.traces.size(), s("device"), gpu, s("cuda_runtime"), s("d2k_version"), s("date"),
                       esc(ceil.empty() ? "-" : ceil));
  }
  return out + "</table>\n";
}

/// Pass rate, geomean speed-ups, mean SOL score and the fast_p curves.
E section_summary(const std::vector<Run>& runs, const std::vector<TargetSummary>& sums) {
  E out = "<h2 id=\"summary\">Suite summary</h2>\n"
          "<p class=note>Speed-ups are geometric means over workloads within a task, then over tasks; S is the SOL "
          "score (1 at speed of light, 0.5 at the naive time); fast_p is the share of records that passed and ran "
          "at least p&times; faster than naive (a failure is never fast). Check workloads are left out.</p>\n"
          "<table><tr><th class=l>run</th><th class=l>target</th><th>records</th><th>passed</th><th>pass rate</th>"
          "<th>geomean vs naive</th><th>vs torch eager</th><th>vs torch compile</th><th>geomean %SOL</th>"
          "<th>mean S</th><th>fast_1</th><th>fast_2</th></tr>\n";
  for (const TargetSummary& s : sums) {
    auto fp = [&](double p) {
      auto it = s.suite.fast_p.find(p);
      return it == s.suite.fast_p.end() ? E("&ndash;") : fmt::format("{:.2f}", it->second);
    };
    out += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       esc(s.run), esc(s.target), s.suite.records, s.suite.passed, 100 * s.suite.pass_rate,
                       opt_fmt(s.suite.geomean_speedup_vs_naive, "{:.2f}&times;"),
                       opt_fmt(s.geomean_vs_torch_eager, "{:.2f}&times;"),
                       opt_fmt(s.geomean_vs_torch_compile, "{:.2f}&times;"), opt_fmt(s.geomean_pct_sol, "{:.1f}"),
                       opt_fmt(s.suite.mean_sol_score, "{:.3f}"), fp(1.0), fp(2.0));
  }
  out += "</table>\n";
  // fast_p: one curve per (run, target) that has speed-ups vs naive (naive itself is 1x: left out).
  PlotSpec plot{"fast-p", "fast_p: share of records at least p x faster than naive", "p (speed-up over naive)",
                "fast_p", false, false, 640, 300, {}, {}};
  const std::vector<double> ps = fast_p_grid();
  for (std::size_t ri = 0; ri < runs.size(); ++ri) {
    const Run& run = runs[ri];
    std::set<std::string> targets;
    for (const Trace& t : run.traces)
      if (t.target != "naive" && t.roofline && t.roofline->speedup_vs_naive) targets.insert(t.target);
    for (const std::string& target : targets) {
      const std::vector<double> ys = fast_p_curve(run.traces, target, ps);
      PlotLine curve{{}, "", runs.size() > 1 ? run.name + ":" + target : target, ri % 2 == 1};
      for (std::size_t i = 0; i < ps.size(); ++i) curve.xy.push_back({ps[i], ys[i]});
      plot.lines.push_back(std::move(curve));
    }
  }
  if (!plot.lines.empty()) out += render_svg(plot) + "\n";
  return out;
}

E section_leaderboard(const std::vector<TargetSummary>& sums) {
  E out = "<h2 id=\"leaderboard\">Leaderboard</h2>\n<p class=note>Ordered by mean SOL score, then geomean speed-up "
          "over naive, then pass rate.</p>\n<table><tr><th>#</th><th class=l>run</th><th class=l>target</th>"
          "<th>mean S</th><th>geomean vs naive</th><th>pass rate</th></tr>\n";
  int rank = 0;
  for (const TargetSummary& s : leaderboard(sums))
    out += fmt::format("<tr><td>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n",
                       ++rank, esc(s.run), esc(s.target), opt_fmt(s.suite.mean_sol_score, "{:.3f}"),
                       opt_fmt(s.suite.geomean_speedup_vs_naive, "{:.2f}&times;"), 100 * s.suite.pass_rate);
  return out + "</table>\n";
}

/// The task's table: one row per (run, target, workload).
E task_table(const std::string& task, const std::vector<Run>& runs) {
  E out = "<table><tr><th class=l>run</th><th class=l>target</th><th class=l>workload</th><th class=l>status</th>"
          "<th>median &micro;s</th><th>noise</th><th>%SOL</th><th class=l>bound</th><th>vs naive</th><th>vs expert</th>"
          "<th>vs eager</th><th>vs compile</th><th>S</th></tr>\n";
  for (const Run& run : runs)
    for (const Trace& t : run.traces) {
      if (t.task != task) continue;
      const bool timed = t.status == Status::PASSED && t.performance;
      const Roofline* r = t.status == Status::PASSED && t.roofline ? &*t.roofline : nullptr;
      out += fmt::format(
          "<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}{}</td><td class=l>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          esc(run.name), esc(t.target), t.hidden ? "hidden " : "", esc(axes_label(t)), status_cell(t),
          timed ? fmt::format("{:.2f}", t.performance->median_us) : "&ndash;",
          timed ? fmt::format("{:.2f}%", 100 * t.performance->rel_noise) : "&ndash;",
          r ? fmt::format("{:.1f}", r->pct_sol) : "&ndash;", r ? esc(r->bound) : "",
          opt_fmt(r ? r->speedup_vs_naive : std::nullopt, "{:.2f}&times;"),
          opt_fmt(r ? r->speedup_vs_expert : std::nullopt, "{:.2f}&times;"),
          opt_fmt(r ? r->speedup_vs_torch_eager : std::nullopt, "{:.2f}&times;"),
          opt_fmt(r ? r->speedup_vs_torch_compile : std::nullopt, "{:.2f}&times;"),
          opt_fmt(r ? r->sol_score : std::nullopt, "{:.3f}"));
    }
  return out + "</table>\n";
}

/// Key/value rows of one trace's details.
E trace_details(const Run& run, const Trace& t) {
  std::vector<std::pair<std::string, std::string>> kv;
  kv.push_back({"status", status_cell(t)});
  if (!t.rule.empty()) kv.push_back({"rule", esc(t.rule)});
  if (!t.message.empty()) kv.push_back({"message", "<div class=msg>" + esc(t.message.substr(0, 4000)) + "</div>"});
  for (const std::string& c : t.checks_fired) kv.push_back({"check fired", esc(c)});
  if (t.correctness) {
    kv.push_back({"correctness", esc(fmt::format("against {}, {} round(s)", t.correctness->against, t.correctness->rounds))});
    for (const OutputCheck& o : t.correctness->outputs)
      kv.push_back({"output " + esc(o.output),
                    esc(fmt::format("{} rule {}: max abs {:.3g}, max rel {:.3g}, rel L2 {:.3g}, {} mismatch(es){}",
                                    o.passed ? "passed" : "FAILED", o.rule, o.max_abs_error, o.max_rel_error, o.rel_l2,
                                    o.mismatches, o.message.empty() ? "" : "; " + o.message))});
  }
  if (const auto& p = t.performance) {
    kv.push_back({"timer", esc(p->timer + (p->timer_note.empty() ? "" : " (" + p->timer_note + ")"))});
    kv.push_back({"time", fmt::format("median {:.3f} &micro;s, mean {:.3f}, min {:.3f}, p10 {:.3f}, p90 {:.3f}, max {:.3f}",
                                      p->median_us, p->mean_us, p->min_us, p->p10_us, p->p90_us, p->max_us)});
    kv.push_back({"noise", fmt::format("{:.2f}% (relative)", 100 * p->rel_noise)});
    kv.push_back({"samples", esc(fmt::format("{} in {:.2f} s, stopped: {}; CUPTI audit {} (empty {}, incomplete {})",
                                             p->samples, p->total_s, p->stop_reason, p->audit_samples, p->audit_empty,
                                             p->audit_incomplete))});
    kv.push_back({"clocks", fmt::format("SM min {:.0f} MHz, median {:.0f} MHz; settle {:.2f} s", p->sm_clock_min_mhz,
                                        p->sm_clock_median_mhz, p->settle_s)});
    std::string thr;
    for (auto& r : p->throttle_reasons) thr += (thr.empty() ? "" : ", ") + r;
    kv.push_back({"throttling", thr.empty() ? "none" : esc(thr)});
    if (p->graph_median_us) kv.push_back({"CUDA graph", fmt::format("median {:.3f} &micro;s", *p->graph_median_us)});
    for (auto& [rule, detail] : p->violations) kv.push_back({"tripwire " + esc(rule), esc(detail)});
  }
  if (const auto& r = t.roofline)
    kv.push_back({"roofline", esc(fmt::format("T_SOL {:.3f} us ({} bound, {} memory model, {} ceilings), {:.1f}% of SOL",
                                              r->t_sol_us, r->bound, r->memory_model, r->ceilings_source, r->pct_sol))});
  E out = fmt::format("<table class=details><caption class=l>{} / {}</caption>\n", esc(run.name), esc(t.target));
  for (auto& [k, v] : kv) out += fmt::format("<tr><th class=l>{}</th><td class=l>{}</td></tr>\n", k, v);
  return out + "</table>\n";
}

/// Per workload of the task, every run's and target's trace details (collapsed).
E task_details(const std::string& task, const std::vector<Run>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::string> label;
  for (const Run& run : runs)
    for (const Trace& t : run.traces)
      if (t.task == task && !label.count(t.workload_uuid)) {
        order.push_back(t.workload_uuid);
        label[t.workload_uuid] = (t.hidden ? "hidden " : "") + axes_label(t) + " (" + t.role + ") " + t.workload_uuid;
      }
  E out;
  for (const std::string& w : order) {
    out += fmt::format("<details class=workload><summary>workload {}</summary>\n", esc(label[w]));
    for (const Run& run : runs)
      for (const Trace& t : run.traces)
        if (t.task == task && t.workload_uuid == w) out += trace_details(run, t);
    out += "</details>\n";
  }
  return out;
}

std::string anchor(const std::string& s) {
  std::string a;
  for (char c : s) a += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return a;
}

E section_compare(const HtmlOptions& opt) {
  E out = fmt::format("<h2 id=\"compare\">Comparison: {} &rarr; {}</h2>\n<p class=note>SAME when the relative "
                      "difference of the medians is within the smaller of the two runs' noises (nvbench's rule); "
                      "status changes are highlighted.</p>\n",
                      esc(opt.compare_a), esc(opt.compare_b));
  out += "<table id=\"compare-table\"><tr><th class=l>verdict</th><th class=l>task</th><th class=l>target</th>"
         "<th class=l>workload</th><th class=l>status A</th><th class=l>status B</th><th>A &micro;s</th>"
         "<th>B &micro;s</th><th>diff</th><th>noise A</th><th>noise B</th></tr>\n";
  auto st = [](const std::optional<Status>& s) { return s ? std::string(status_name(*s)) : std::string("-"); };
  auto num = [](const std::optional<double>& v, double scale, const char* spec) {
    return v ? fmt::format(fmt::runtime(spec), scale * *v) : E("&ndash;");
  };
  for (const CompareRow& r : *opt.compare) {
    const char* v = verdict_name(r.verdict);
    out += fmt::format("<tr{}><td class=\"l v-{}\">{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td>"
                       "<td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       r.verdict == Verdict::STATUS_CHANGED ? " class=changed" : "", v, v, esc(r.task), esc(r.target),
                       esc(r.workload), st(r.status_a), st(r.status_b), num(r.time_a_us, 1, "{:.2f}"),
                       num(r.time_b_us, 1, "{:.2f}"), num(r.frac_diff, 100, "{:+.2f}%"), num(r.noise_a, 100, "{:.2f}%"),
                       num(r.noise_b, 100, "{:.2f}%"));
  }
  return out + "</table>\n";
}

}  // namespace

E render_html(const std::vector<Run>& runs, const HtmlOptions& opt) {
  const std::vector<TargetSummary> sums = summarize_runs(runs);
  const std::vector<std::string> tasks = tasks_of(runs);
  E out = page_head(opt.title);
  out += "<p class=note>Written by <code>d2k report</code>. Sections: ";
  if (opt.compare) out += "<a href=\"#compare\">comparison</a>, ";
  out += "<a href=\"#runs\">runs</a>, <a href=\"#summary\">summary</a>, <a href=\"#leaderboard\">leaderboard</a>";
  for (const std::string& t : tasks) out += fmt::format(", <a href=\"#task-{}\">{}</a>", anchor(t), esc(t));
  out += ".</p>\n";
  if (opt.compare) out += section_compare(opt);
  out += section_runs(runs);
  out += section_summary(runs, sums);
  out += section_leaderboard(sums);
  for (const std::string& task : tasks) {
    out += fmt::format("<h2 id=\"task-{}\">{}</h2>\n", anchor(task), esc(task));
    out += task_table(task, runs);
    out += roofline_svg(task, runs) + "\n";
    out += "<h3>Trace details per workload</h3>\n" + task_details(task, runs);
  }
  return out + "</body></html>\n";
}

}  // namespace d2k::report
