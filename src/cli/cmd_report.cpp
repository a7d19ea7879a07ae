// d2k report | export | import: reports over trace files (docs/report.md). Rendering and the
// interchange formats live in src/report/; here: arguments, files, and the costs and ceilings
// that older traces lack.
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "cli/dataset.h"
#include "engine/plan.h"
#include "measure/ceilings.h"
#include "report/compare.h"
#include "report/flashinfer.h"
#include "report/html.h"
#include "report/markdown.h"
#include "report/runs.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::vector<std::string> traces;
  std::string html_out, markdown_out, title = "D2K-Bench report", calibration;
  bool compare = false, no_dataset = false;
  std::string format = "flashinfer-trace", out;
};

void write_file(const std::string& path, const std::string& text, const char* option) {
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << text)) throw std::runtime_error(fmt::format("{}: cannot write {}", option, path));
}

/// Traces written before the roofline carried its cost and ceilings (report::plottable) get them
/// here: the cost from the dataset's task and workload (the plan a run makes), the ceilings from
/// the calibration cache of the trace's GPU, else the datasheet. A task or workload the dataset
/// lacks, or a GPU with neither, leaves the trace unplotted (counted in the page's data-dropped).
int fill_roofline_costs(std::vector<report::Run>& runs, const Globals& g, const std::string& calibration) {
  Diagnostics diag;
  std::map<std::string, Task> tasks;
  try {
    for (Task& t : load_all_tasks(g, diag)) tasks.emplace(t.def.name, std::move(t));
  } catch (const std::exception&) {
    return 0;  // no dataset here: the traces are what there is
  }
  const fs::path cache = calibration.empty() ? measure::calibration_cache_path() : fs::path(calibration);
  int filled = 0;
  for (report::Run& run : runs)
    for (Trace& t : run.traces) {
      if (!t.roofline || t.roofline->bytes > 0 || t.status != Status::PASSED) continue;
      auto task = tasks.find(t.task);
      if (task == tasks.end()) continue;
      const auto& ws = task->second.workloads;
      auto w = std::find_if(ws.begin(), ws.end(), [&](const Workload& x) { return x.uuid == t.workload_uuid; });
      if (w == ws.end()) continue;
      Workload shaped = *w;
      for (auto& [k, v] : t.axes) shaped.axes[k] = v;  // a hidden workload's drawn axes
      try {
        const WorkloadPlan plan = make_plan(task->second, shaped);
        t.roofline->flops = plan.flops;
        t.roofline->bytes = plan.bytes;
        if (t.environment.is_object() && t.environment.contains("gpu") && t.roofline->copy_bw <= 0) {
          const auto id = t.environment["gpu"].get<measure::DeviceIdentity>();
          std::optional<measure::Ceilings> c = measure::load_cached_ceilings(id.key(), cache);
          if (!c) c = measure::datasheet_ceilings(id);
          if (c) {
            t.roofline->copy_bw = c->copy_bw;
            for (auto& [unit, ops] : plan.flops)
              if (ops > 0 && c->peak.count(unit)) t.roofline->peaks[unit] = c->peak.at(unit);
          }
        }
        ++filled;
      } catch (const std::exception&) {
        // A workload the task no longer accepts: left unplotted.
      }
    }
  return filled;
}

std::vector<report::Run> read_runs(const std::vector<std::string>& files) {
  std::vector<report::Run> runs;
  std::set<std::string> names;
  for (const std::string& f : files) {
    runs.push_back(report::read_run(f));
    // Two files with one stem (a/run.jsonl, b/run.jsonl) keep apart by their path.
    if (!names.insert(runs.back().name).second) runs.back().name = f;
  }
  return runs;
}

int run_report(const Globals& g, ReportArgs& a) {
  if (a.compare && a.traces.size() != 2)
    throw std::runtime_error(fmt::format("--compare takes two trace files (A B), got {}", a.traces.size()));
  std::vector<report::Run> runs = read_runs(a.traces);
  if (!a.no_dataset) fill_roofline_costs(runs, g, a.calibration);
  std::vector<report::CompareRow> rows;
  if (a.compare) {
    rows = report::compare_runs(runs[0], runs[1]);
    std::cout << report::format_compare(rows, TableFormat::text);
  }
  if (!a.html_out.empty()) {
    report::HtmlOptions opt;
    opt.title = a.title;
    if (a.compare) opt.compare = &rows, opt.compare_a = runs[0].name, opt.compare_b = runs[1].name;
    write_file(a.html_out, report::render_html(runs, opt), "--html");
  }
  const std::string md = report::render_markdown(runs, a.compare ? &rows : nullptr, a.title);
  if (!a.markdown_out.empty()) write_file(a.markdown_out, md, "--markdown");
  if (!a.compare && a.html_out.empty() && a.markdown_out.empty()) std::cout << md;
  return 0;
}

/// Task name -> input names, from the dataset when it has the task.
std::map<std::string, std::vector<std::string>> input_names(const Globals& g) {
  std::map<std::string, std::vector<std::string>> out;
  Diagnostics diag;
  try {
    for (const Task& t : load_all_tasks(g, diag))
      for (const TensorSpec& in : t.def.inputs) out[t.def.name].push_back(in.name);
  } catch (const std::exception&) {
  }
  return out;
}

/// Writes OUT/traces/<task>.jsonl and OUT/workloads/<task>.jsonl.
int run_export(const Globals& g, const ReportArgs& a) {
  std::vector<Trace> all;
  for (const report::Run& r : read_runs(a.traces)) all.insert(all.end(), r.traces.begin(), r.traces.end());
  const report::FlashInferSet set = report::to_flashinfer(all, input_names(g));
  for (const char* sub : {"traces", "workloads"}) fs::create_directories(fs::path(a.out) / sub);
  auto write = [&](const char* sub, const std::map<std::string, std::vector<nlohmann::json>>& by_task) {
    for (auto& [task, records] : by_task) {
      std::string text;
      for (const auto& j : records) text += report::dump_flashinfer(j) + "\n";
      write_file((fs::path(a.out) / sub / (task + ".jsonl")).string(), text, "--out");
    }
  };
  write("traces", set.traces);
  write("workloads", set.workloads);
  std::size_t n = 0;
  for (auto& [task, records] : set.traces) n += records.size();
  fmt::print(stderr, "export: {} trace(s) of {} task(s) to {}{}\n", n, set.traces.size(), a.out,
             set.skipped ? fmt::format(" ({} SKIPPED left out: nothing was evaluated)", set.skipped) : "");
  return 0;
}

/// Reads their trace files (JSON lines) and writes D2K traces, one JSON object per line.
int run_import(const ReportArgs& a) {
  std::ofstream out(a.out);
  if (!out) throw std::runtime_error("--out: cannot write " + a.out);
  int traces = 0, workloads = 0;
  for (const std::string& file : a.traces) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read", file));
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        std::optional<Trace> t = report::from_flashinfer_trace(report::parse_flashinfer(line));
        if (!t) {
          ++workloads;
          continue;
        }
        out << to_json(*t).dump() << "\n";
        ++traces;
      } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{}:{}: {}", file, n, e.what()));
      }
    }
  }
  fmt::print(stderr, "import: {} trace(s) to {}; {} workload record(s) skipped\n", traces, a.out, workloads);
  return 0;
}

}  // namespace

void add_report(CLI::App& app, Globals& g, Runner& run) {
  static ReportArgs a;
  auto* rep = app.add_subcommand("report", "HTML and Markdown reports over trace files; --compare A B");
  rep->add_option("traces", a.traces, "trace files (JSON lines from bench/suite --json or run --out)")
      ->required()
      ->check(CLI::ExistingFile);
  rep->add_option("--html", a.html_out, "write the self-contained HTML report here");
  rep->add_option("--markdown", a.markdown_out, "write the Markdown report here");
  rep->add_option("--title", a.title, "the report's title");
  rep->add_flag("--compare", a.compare, "compare two runs A B: SAME/FASTER/SLOWER per workload, status changes");
  rep->add_option("--calibration", a.calibration,
                  "calibration cache for traces without ceilings (default: the d2k calibrate cache)");
  rep->add_flag("--no-dataset", a.no_dataset, "do not look up costs of older traces in the dataset");
  rep->callback([&] { run = [&] { return run_report(g, a); }; });

  auto* exp = app.add_subcommand("export", "write traces in another benchmark's schema");
  exp->add_option("traces", a.traces, "D2K trace files (JSON lines)")->required()->check(CLI::ExistingFile);
  exp->add_option("--format", a.format, "flashinfer-trace (FlashInfer-Bench's Trace and Workload records)")
      ->check(CLI::IsMember({"flashinfer-trace"}));
  exp->add_option("--out", a.out, "output folder: traces/<task>.jsonl and workloads/<task>.jsonl")->required();
  exp->callback([&] { run = [&] { return run_export(g, a); }; });

  auto* imp = app.add_subcommand("import", "read FlashInfer-Bench trace files into D2K traces");
  imp->add_option("traces", a.traces, "their trace files (JSON lines)")->required()->check(CLI::ExistingFile);
  imp->add_option("--format", a.format, "flashinfer-trace")->check(CLI::IsMember({"flashinfer-trace"}));
  imp->add_option("--out", a.out, "write D2K traces here (JSON lines)")->required();
  imp->callback([&] { run = [&] { return run_import(a); }; });
}

}  // namespace d2k::cli
