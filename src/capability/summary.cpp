// The run summary: aggregation into JSON, then Markdown from that JSON (one source of numbers).
#include "capability/summary.h"

#include <map>

#include <fmt/format.h>

namespace d2k::capability {

using nlohmann::json;

namespace {

// Running means of the scores of a group of attempts.
struct Group {
  int attempts = 0, scored = 0, flags = 0;
  double js_design = 0, js_impl = 0;
  std::array<double, 3> design{}, impl{};

  void add(const AttemptScore& s) {
    ++attempts;
    flags += s.flag_count();
    if (!s.js_design || !s.js_impl) return;
    ++scored;
    js_design += *s.js_design;
    js_impl += *s.js_impl;
    for (int l = 0; l < 3; ++l) {
      design[l] += *s.design[l].score;
      impl[l] += *s.impl[l].score;
    }
  }
  json to_json() const {
    auto mean = [&](double v) { return scored ? json(v / scored) : json(nullptr); };
    json d = json::array(), i = json::array();
    for (int l = 0; l < 3; ++l) {
      d.push_back(mean(design[l]));
      i.push_back(mean(impl[l]));
    }
    return {{"attempts", attempts}, {"scored", scored}, {"flags", flags}, {"js_design", mean(js_design)},
            {"js_impl", mean(js_impl)}, {"design_levels", d}, {"impl_levels", i}};
  }
};

std::string num(const json& v) { return v.is_number() ? fmt::format("{:.1f}", v.get<double>()) : "n/a"; }

std::string levels(const json& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : " / ") + (x.is_number() ? fmt::format("{:.0f}", x.get<double>()) : "n/a");
  return out;
}

}  // namespace

json summarize(const std::string& run, const std::vector<AttemptScore>& scores, const JudgeInfo& judge) {
  Group all;
  std::map<std::string, Group> by_task;
  std::map<std::string, std::map<std::string, Group>> by_task_level;
  json attempts = json::array();
  for (const auto& s : scores) {
    all.add(s);
    by_task[s.ref.task].add(s);
    by_task_level[s.ref.task][s.ref.level].add(s);
    json d = json::array(), i = json::array();
    for (int l = 0; l < 3; ++l) {
      d.push_back(s.design[l].score ? json(*s.design[l].score) : json(nullptr));
      i.push_back(s.impl[l].score ? json(*s.impl[l].score) : json(nullptr));
    }
    json flags = json::array();
    for (const auto& l : s.impl)
      for (const auto& f : l.flags) flags.push_back(f);
    attempts.push_back({{"attempt", s.ref.name}, {"task", s.ref.task}, {"track", s.ref.track}, {"level", s.ref.level},
                        {"k", s.ref.k}, {"js_design", s.js_design ? json(*s.js_design) : json(nullptr)},
                        {"js_impl", s.js_impl ? json(*s.js_impl) : json(nullptr)}, {"design_levels", d},
                        {"impl_levels", i}, {"flags", flags}});
  }
  json tasks = json::object(), task_levels = json::object();
  for (const auto& [t, g] : by_task) tasks[t] = g.to_json();
  for (const auto& [t, m] : by_task_level)
    for (const auto& [l, g] : m) task_levels[t][l] = g.to_json();
  return {{"run", run},
          {"judge", {{"api", judge.api}, {"model", judge.model}, {"samples", judge.samples}, {"calls", judge.calls}}},
          {"overall", all.to_json()},
          {"tasks", tasks},
          {"task_levels", task_levels},
          {"attempts", attempts}};
}

std::string summary_markdown(const json& s) {
  std::string md = fmt::format("# Capability scores: {}\n\n", s.value("run", ""));
  const json& j = s.at("judge");
  md += fmt::format("Judge: {} ({}), {} sample(s) per level (median), {} call(s) made in this scoring. "
                    "JS = (L1 + L2 + L3) / 3 on the anchors 0/25/50/75/100; levels are listed L1 / L2 / L3.\n\n",
                    j.value("model", ""), j.value("api", ""), j.value("samples", 1), j.value("calls", 0));
  const json& o = s.at("overall");
  md += fmt::format("**Run:** JS_design {}, JS_impl {} over {} scored attempt(s) of {}; {} evidence flag(s).\n\n",
                    num(o["js_design"]), num(o["js_impl"]), o.value("scored", 0), o.value("attempts", 0), o.value("flags", 0));
  md += "## Per task\n\n| task | attempts | JS_design | design L1/L2/L3 | JS_impl | impl L1/L2/L3 | flags |\n"
        "| --- | ---: | ---: | --- | ---: | --- | ---: |\n";
  for (const auto& [t, g] : s.at("tasks").items())
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", t, g.value("attempts", 0), num(g["js_design"]),
                      levels(g["design_levels"]), num(g["js_impl"]), levels(g["impl_levels"]), g.value("flags", 0));
  md += "\n## Per task and workspace level\n\n| task | level | attempts | JS_design | JS_impl | flags |\n"
        "| --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [t, m] : s.at("task_levels").items())
    for (const auto& [l, g] : m.items())
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", t, l, g.value("attempts", 0), num(g["js_design"]),
                        num(g["js_impl"]), g.value("flags", 0));
  md += "\n## Attempts\n\n| attempt | JS_design | design L1/L2/L3 | JS_impl | impl L1/L2/L3 | flags |\n"
        "| --- | ---: | --- | ---: | --- | ---: |\n";
  std::string flags;
  for (const auto& a : s.at("attempts")) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", a.value("attempt", ""), num(a["js_design"]), levels(a["design_levels"]),
                      num(a["js_impl"]), levels(a["impl_levels"]), a["flags"].size());
    for (const auto& f : a["flags"]) flags += fmt::format("- {}: {}\n", a.value("attempt", ""), f.get<std::string>());
  }
  md += "\n## Evidence flags\n\n";
  md += flags.empty() ? "None: no level the judge credits is contradicted by the machine code.\n" : flags;
  md += "\nEach attempt's score.json has the judge's reasons per level and sample, and the evidence per design item.\n";
  return md;
}

}  // namespace d2k::capability
