// d2k score (capability scores of a batch run's attempts or of one workspace) and d2k design
// draft (design.json drafted by the judge backend). docs/scorer.md.
#include <fmt/core.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "capability/draft.h"
#include "capability/library.h"
#include "capability/prompt.h"
#include "capability/scorer.h"
#include "capability/summary.h"
#include "cli/commands.h"
#include "cli/dataset.h"
#include "tracks/target.h"

namespace d2k::cli {

namespace fs = std::filesystem;
namespace cap = d2k::capability;

namespace {

struct ScoreArgs {
  std::string run, runs_dir = "runs", workspace, judge, prompts, library;
  int samples = 0;
  bool no_build = false;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", p.string()));
}

const char* api_name(cap::JudgeApi a) { return a == cap::JudgeApi::openai ? "openai" : "anthropic"; }

// Tasks are loaded once per scoring, cleanly or not at all (a task that does not validate has no
// rubric to judge against).
class GuidanceCache {
 public:
  explicit GuidanceCache(const Globals& g) : g_(g) {}
  const cap::TaskGuidance& get(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    Diagnostics diag;
    cap::TaskGuidance t;
    t.task = load_one_task(g_, name, diag);
    t.levels = load_design_levels(dataset_dir(g_) / "design_levels.json", diag);
    t.spec = slurp(t.task.dir / "spec.md");
    return cache_.emplace(name, std::move(t)).first->second;
  }

 private:
  const Globals& g_;
  std::map<std::string, cap::TaskGuidance> cache_;
};

fs::path resolve_run(const ScoreArgs& a) {
  if (fs::is_directory(fs::path(a.run) / "attempts")) return a.run;
  const fs::path p = fs::path(a.runs_dir) / a.run;
  if (!fs::is_directory(p)) throw std::runtime_error(fmt::format("--run {}: no such run (looked in {} and {})", a.run, a.run, p.string()));
  return p;
}

int run_score(const Globals& g, const ScoreArgs& a) {
  if (a.run.empty() == a.workspace.empty()) throw std::runtime_error("give exactly one of --run RUN and --workspace DIR");
  cap::JudgeConfig cfg = cap::load_judge_config(a.judge);
  if (a.samples > 0) cfg.samples = a.samples;
  const cap::Prompts prompts = cap::load_prompts(cap::prompts_dir(a.prompts));
  auto judge = cap::make_judge(cfg);
  GuidanceCache guidance(g);

  std::vector<cap::AttemptRef> attempts;
  fs::path run_dir;
  if (!a.run.empty()) {
    run_dir = resolve_run(a);
    attempts = cap::find_run_attempts(run_dir);
    if (attempts.empty()) throw std::runtime_error(fmt::format("{}: the run has no attempts", run_dir.string()));
  } else {
    attempts.push_back(cap::workspace_attempt(a.workspace));
  }
  if (!a.library.empty() && attempts.size() != 1) throw std::runtime_error("--library is for one workspace (--workspace DIR)");

  std::vector<cap::AttemptScore> scores;
  for (const auto& at : attempts) {
    const cap::TaskGuidance& tg = guidance.get(at.task);
    cap::LibraryEvidence lib;
    if (!a.library.empty()) lib = cap::disassemble_library(a.library);
    else if (a.no_build) lib.note = "not built (--no-build)";
    else lib = cap::build_and_disassemble(tg.task, at);
    const cap::AttemptMaterial m = cap::read_attempt_material(at);
    cap::AttemptScore s = cap::score_attempt(at, m, tg, lib, *judge, prompts, {cfg.samples});
    write_file(at.dir / "score.json", cap::to_json(s).dump(2) + "\n");
    fmt::print("{}: JS_design {} JS_impl {}{}\n", at.name, s.js_design ? fmt::format("{:.1f}", *s.js_design) : "n/a",
               s.js_impl ? fmt::format("{:.1f}", *s.js_impl) : "n/a",
               s.flag_count() ? fmt::format(" ({} evidence flag(s))", s.flag_count()) : "");
    for (const auto& l : s.impl)
      for (const auto& f : l.flags) fmt::print("  FLAG {}\n", f);
    scores.push_back(std::move(s));
  }
  const cap::JudgeInfo info{api_name(cfg.api), cfg.model, cfg.samples, judge->calls()};
  const std::string name = run_dir.empty() ? attempts[0].name : run_dir.filename().string();
  const nlohmann::json summary = cap::summarize(name, scores, info);
  if (!run_dir.empty()) {
    write_file(run_dir / "score.json", summary.dump(2) + "\n");
    write_file(run_dir / "score.md", cap::summary_markdown(summary));
    fmt::print("wrote {} and {} ({} judge call(s))\n", (run_dir / "score.json").string(), (run_dir / "score.md").string(),
               judge->calls());
  } else {
    fmt::print("wrote {} ({} judge call(s))\n", (attempts[0].dir / "score.json").string(), judge->calls());
  }
  return 0;
}

struct DraftArgs {
  std::string task, judge, prompts, out;
};

int run_draft(const Globals& g, const DraftArgs& a) {
  cap::JudgeConfig cfg = cap::load_judge_config(a.judge);
  const cap::Prompts prompts = cap::load_prompts(cap::prompts_dir(a.prompts));
  auto judge = cap::make_judge(cfg);
  GuidanceCache guidance(g);
  const cap::TaskGuidance& tg = guidance.get(a.task);
  const std::string levels_json = slurp(dataset_dir(g) / "design_levels.json");
  const std::string prompt = cap::draft_prompt(tg, prompts, cap::read_expert_material(tg.task), levels_json);
  const std::string answer = judge->complete(prompt, 0);
  auto draft = cap::extract_json_object(answer);
  if (!draft) {
    fmt::print(stderr, "d2k design draft: the judge's answer holds no JSON object; its first 500 characters:\n{}\n",
               answer.substr(0, 500));
    return 1;
  }
  const std::string draft_text = draft->dump(2) + "\n";
  const std::string draft_name = a.out.empty() ? "design.json (draft)" : a.out;
  if (!a.out.empty()) write_file(a.out, draft_text);
  else fmt::print("{}", draft_text);
  const Diagnostics diag = cap::validate_draft(tg.task, tg.levels, *draft, draft_name);
  const fs::path current = tg.task.dir / "design.json";
  std::string current_text;
  if (fs::is_regular_file(current)) {
    auto cur = nlohmann::ordered_json::parse(slurp(current), nullptr, false);
    current_text = cur.is_discarded() ? slurp(current) : cur.dump(2) + "\n";
  }
  const std::string diff = cap::unified_diff(current_text, draft_text, current.string(), draft_name);
  fmt::print("{}", diff.empty() ? "(the draft equals the current design.json)\n" : diff);
  if (!diag.items().empty()) fmt::print(stderr, "{}", diag.format());
  if (!diag.ok()) {
    fmt::print(stderr, "d2k design draft: the draft breaks {} design rule(s) (docs/task-format.md); edit it before use\n",
               diag.error_count());
    return 1;
  }
  fmt::print(stderr, "d2k design draft: the draft passes the design rules{}\n", a.out.empty() ? "" : "; written to " + a.out);
  return 0;
}

struct EvidenceArgs {
  std::string task, library, check;
  std::vector<std::string> impls{"naive", "expert"};
  bool markdown = false;
};

// The opcode families docs/scorer.md names as design signatures, counted for the overview table.
const std::vector<std::string> kFamilies = {"HGMMA", "HMMA", "UTMALDG", "UTMASTG", "LDGSTS", "ATOMS", "ATOMG", "RED", "MATCH",
                                            "SHFL", "LDG.E.128", "LDG.E.EF.128", "STG.E.128", "STG.E.EF.128", "LDL", "STL",
                                            "MUFU.RSQ", "MUFU.RCP"};

int run_evidence(const Globals& g, const EvidenceArgs& a) {
  GuidanceCache guidance(g);
  const cap::TaskGuidance& tg = guidance.get(a.task);
  std::vector<std::pair<std::string, fs::path>> libs;
  if (!a.library.empty()) libs.emplace_back(a.library, a.library);
  else
    for (const auto& i : a.impls) {
      std::string file = i;
      if (file.rfind("expert:", 0) == 0) file = "expert_" + file.substr(7);
      libs.emplace_back(i, builtin_impl_dir() / a.task / (file + ".so"));
    }
  int failed = 0;
  for (const auto& [name, path] : libs) {
    const cap::LibraryEvidence lib = cap::disassemble_library(path);
    if (!lib.listing) {
      fmt::print(stderr, "{} {}: {}\n", a.task, name, lib.note);
      ++failed;
      continue;
    }
    std::int64_t total = 0;
    for (const auto& [op, n] : lib.listing->total) total += n;
    std::vector<std::string> fam;
    for (const auto& f : kFamilies)
      if (auto n = cap::count_matching(lib.listing->total, f)) fam.push_back(fmt::format("{} {}", f, n));
    std::optional<std::vector<std::string>> ran;
    if (!a.check.empty()) {
      ran = cap::kernels_that_ran(a.check);
      if (!ran) fmt::print(stderr, "{}: no kernel set in the traces (not run on a GPU?)\n", a.check);
    }
    const auto ev = cap::collect_evidence(*tg.task.design, lib.listing, ran);
    auto found_text = [](const cap::ItemEvidence& e) {
      std::string t = fmt::format("{}", fmt::join(e.found, ", "));
      if (!e.forbidden.empty()) t += fmt::format("{}forbidden: {}", t.empty() ? "" : "; ", fmt::join(e.forbidden, ", "));
      return t;
    };
    auto ran_text = [](const cap::ItemEvidence& e) { return !e.ran ? std::string("n/a") : *e.ran ? "yes" : "no"; };
    if (a.markdown) {
      fmt::print("\n### {} {}\n\n{} kernels, {} instructions. Signature families: {}.\n\n", a.task, name,
                 lib.listing->kernels.size(), total, fam.empty() ? "none" : fmt::format("{}", fmt::join(fam, ", ")));
      fmt::print("| design item | signature | status | ran | found |\n| --- | --- | --- | --- | --- |\n");
      for (const auto& e : ev)
        fmt::print("| {} | {}{}{} | {} | {} | {} |\n", e.id, e.sass.empty() ? "" : fmt::format("{}", fmt::join(e.sass, " or ")),
                   e.sass.empty() || e.sass_absent.empty() ? "" : "; ",
                   e.sass_absent.empty() ? "" : fmt::format("none of {}", fmt::join(e.sass_absent, ", ")), e.status,
                   ran_text(e), found_text(e));
    } else {
      fmt::print("{} {}: {} kernel(s), {} instruction(s); {}\n", a.task, name, lib.listing->kernels.size(), total,
                 fmt::join(fam, ", "));
      for (const auto& e : ev)
        fmt::print("  {:<40} {:<10} ran: {:<4} {}\n", e.id, e.status, ran_text(e), found_text(e));
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_score(CLI::App& app, Globals& g, Runner& run) {
  static ScoreArgs a;
  auto* sc = app.add_subcommand("score", "capability scores (JS_design, JS_impl) of a batch run or a workspace, with machine-code evidence");
  sc->add_option("--run", a.run, "the run: runs/<RUN> (see --runs-dir) or a run folder");
  sc->add_option("--runs-dir", a.runs_dir, "where runs live (default: runs)");
  sc->add_option("--workspace", a.workspace, "score one workspace folder instead of a run");
  sc->add_option("--judge", a.judge, "judge configuration (TOML; config/judge.example.toml)")->required();
  sc->add_option("--samples", a.samples, "self-consistency: samples per level, median (overrides the configuration)")
      ->check(CLI::Range(1, 15));
  sc->add_option("--prompts", a.prompts, "prompt templates folder (default: $D2K_PROMPTS_DIR or the checkout's capability/prompts)");
  sc->add_flag("--no-build", a.no_build, "do not build the solutions: no machine-code evidence");
  sc->add_option("--library", a.library, "with --workspace: an already built library to take the evidence from");
  sc->callback([&] { run = [&] { return run_score(g, a); }; });

  static DraftArgs d;
  auto* design = app.add_subcommand("design", "design guidance authoring");
  design->require_subcommand(1);
  auto* draft = design->add_subcommand("draft", "draft a task's design.json with the judge backend; validated, diffed against the current file");
  draft->add_option("--task", d.task, "the task")->required();
  draft->add_option("--judge", d.judge, "judge configuration (TOML)")->required();
  draft->add_option("--out", d.out, "write the draft here (default: print it)");
  draft->add_option("--prompts", d.prompts, "prompt templates folder");
  draft->callback([&] { run = [&] { return run_draft(g, d); }; });

  static EvidenceArgs e;
  auto* ev = design->add_subcommand("evidence", "the machine-code evidence of a task's design items in built libraries (cuobjdump -sass)");
  ev->add_option("--task", e.task, "the task")->required();
  ev->add_option("--impl", e.impls, "built-in implementations: naive, expert, expert:<variant>, library (default: naive expert)")
      ->delimiter(',');
  ev->add_option("--library", e.library, "a built library instead of the built-in implementations");
  ev->add_option("--check", e.check, "traces (d2k bench --json) whose audit kernel set says which kernels ran");
  ev->add_flag("--markdown", e.markdown, "Markdown tables");
  ev->callback([&] { run = [&] { return run_evidence(g, e); }; });
}

}  // namespace d2k::cli
