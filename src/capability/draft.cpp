// Drafting design.json with the judge backend: prompt, extraction, validation, diff.
#include "capability/draft.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "capability/prompt.h"
#include "capability/subprocess.h"
#include "core/task_loader.h"

namespace d2k::capability {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

ExpertMaterial read_expert_material(const Task& task, std::size_t max_bytes) {
  ExpertMaterial m;
  std::vector<fs::path> files;
  if (fs::is_regular_file(task.dir / "expert.cu")) files.push_back(task.dir / "expert.cu");
  std::vector<fs::path> headers;
  for (const auto& e : fs::directory_iterator(task.dir))
    if (e.is_regular_file() && (e.path().extension() == ".cuh" || e.path().extension() == ".h")) headers.push_back(e.path());
  std::sort(headers.begin(), headers.end());
  files.insert(files.end(), headers.begin(), headers.end());
  for (const auto& f : files) {
    if (m.code.size() >= max_bytes) {
      m.code += "(further files left out: size bound)\n";
      break;
    }
    std::string text = slurp(f);
    if (text.size() > max_bytes - m.code.size()) text = text.substr(0, max_bytes - m.code.size()) + "\n(cut)";
    m.code += fmt::format("=== {} ===\n{}\n", f.filename().string(), text);
  }
  // The same marker the build reads (dataset/CMakeLists.txt, d2k_expert_variants).
  static const std::regex kVariant(R"(^//[ ]*%VARIANT%[ ]+([A-Za-z0-9_]+)[ ]*(.*)$)");
  std::istringstream in(slurp(task.dir / "expert.cu"));
  std::string line;
  while (std::getline(in, line)) {
    std::smatch mt;
    if (std::regex_match(line, mt, kVariant)) m.variants += fmt::format("| {} | `{}` |\n", mt[1].str(), mt[2].str());
  }
  m.variants = m.variants.empty() ? "(the expert declares no variants)\n"
                                  : "| variant | flags |\n| --- | --- |\n" + m.variants;
  return m;
}

std::string draft_prompt(const TaskGuidance& g, const Prompts& p, const ExpertMaterial& m, const std::string& design_levels_json) {
  return render_template(p.draft_design,
                         {{"task", g.task.def.name},
                          {"spec", g.spec},
                          {"design_levels", design_levels_json},
                          {"expert_code", m.code},
                          {"variants", m.variants}},
                         "draft_design.md");
}

std::optional<ordered_json> extract_json_object(const std::string& answer) {
  auto try_parse = [](const std::string& s) -> std::optional<ordered_json> {
    auto j = ordered_json::parse(s, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
  };
  if (auto j = try_parse(answer)) return j;
  const auto fence = answer.find("```");
  if (fence != std::string::npos) {
    const auto nl = answer.find('\n', fence);
    const auto end = nl == std::string::npos ? std::string::npos : answer.find("```", nl);
    if (end != std::string::npos)
      if (auto j = try_parse(answer.substr(nl + 1, end - nl - 1))) return j;
  }
  const auto b = answer.find('{');
  const auto e = answer.rfind('}');
  if (b != std::string::npos && e != std::string::npos && e > b) return try_parse(answer.substr(b, e - b + 1));
  return std::nullopt;
}

Diagnostics validate_draft(const Task& task, const DesignLevels& levels, const ordered_json& draft, const std::string& file) {
  Diagnostics load;
  Task t = task;
  t.design = design_from_json(draft, load, file);
  // validate_task names the design file by the task folder; rename its findings to the draft.
  Diagnostics all;
  validate_task(t, levels, all);
  const std::string design_file = (task.dir / "design.json").string();
  Diagnostics out;
  for (const auto& d : load.items()) {
    if (d.severity == Diagnostic::Severity::error) out.error(d.file, d.line, d.field, d.message);
    else out.warning(d.file, d.line, d.field, d.message);
  }
  for (const auto& d : all.items()) {
    if (d.file != design_file) continue;
    if (d.severity == Diagnostic::Severity::error) out.error(file, d.line, d.field, d.message);
    else out.warning(file, d.line, d.field, d.message);
  }
  return out;
}

std::string unified_diff(const std::string& old_text, const std::string& new_text, const std::string& old_name,
                         const std::string& new_name) {
  if (old_text == new_text) return {};
  char tmpl[] = "/tmp/d2k-diff-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (!dir) throw std::runtime_error("cannot create a temporary folder for the diff");
  const fs::path a = fs::path(dir) / "a", b = fs::path(dir) / "b";
  std::ofstream(a, std::ios::binary) << old_text;
  std::ofstream(b, std::ios::binary) << new_text;
  std::string diff_tool;
  for (const char* c : {"/usr/bin/diff", "/bin/diff"})
    if (::access(c, X_OK) == 0) {
      diff_tool = c;
      break;
    }
  ToolResult r;
  if (!diff_tool.empty())
    r = run_tool({diff_tool, "-u", "--label", old_name, "--label", new_name, a.string(), b.string()}, 60, 64ull << 20);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (diff_tool.empty()) throw std::runtime_error("no diff program (/usr/bin/diff) to show the changes");
  if (r.exit_code != 0 && r.exit_code != 1) throw std::runtime_error(fmt::format("diff failed: {}", r.err));
  return r.out;
}

}  // namespace d2k::capability
