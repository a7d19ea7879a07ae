// Finding attempts in a run folder and reading what the judge is shown of each.
#include "capability/attempt.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace d2k::capability {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const auto at = s.find(sep, pos);
    out.push_back(s.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) break;
    pos = at + sep.size();
  }
  return out;
}

std::string read_file(const fs::path& p, std::size_t max_bytes, bool& truncated) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::string s(max_bytes + 1, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(in.gcount()));
  truncated = s.size() > max_bytes;
  if (truncated) s.resize(max_bytes);
  return s;
}

// The manifest's task/track/level override the folder name's (the name is only a convention).
void apply_manifest(AttemptRef& a) {
  std::ifstream in(a.workspace / "manifest.json");
  if (!in) return;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  for (auto [key, dst] : {std::pair{"task", &a.task}, std::pair{"track", &a.track}, std::pair{"level", &a.level}})
    if (j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty()) *dst = j[key].get<std::string>();
  a.level = level_from_folder(a.level);
}

}  // namespace

std::string level_from_folder(const std::string& folder_level) {
  std::string l = folder_level;
  std::replace(l.begin(), l.end(), '_', '+');
  return l;
}

std::vector<AttemptRef> find_run_attempts(const fs::path& run_dir) {
  const fs::path dir = run_dir / "attempts";
  if (!fs::is_directory(dir)) throw std::runtime_error(fmt::format("{}: no attempts/ folder (not a batch run)", run_dir.string()));
  std::vector<AttemptRef> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory() || e.is_symlink()) continue;
    AttemptRef a;
    a.name = e.path().filename().string();
    a.dir = e.path();
    a.workspace = e.path() / "workspace";
    a.check_json = e.path() / "check.json";
    const auto parts = split(a.name, "__");
    if (parts.size() != 4)
      throw std::runtime_error(fmt::format("{}: attempt folder name is not <task>__<track>__<level>__<k>", e.path().string()));
    a.task = parts[0];
    a.track = parts[1];
    a.level = level_from_folder(parts[2]);
    try {
      a.k = std::stoi(parts[3]);
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("{}: attempt number '{}' is not an integer", e.path().string(), parts[3]));
    }
    apply_manifest(a);
    out.push_back(std::move(a));
  }
  std::sort(out.begin(), out.end(), [](const AttemptRef& x, const AttemptRef& y) { return x.name < y.name; });
  return out;
}

AttemptRef workspace_attempt(const fs::path& workspace) {
  if (!fs::is_directory(workspace)) throw std::runtime_error(fmt::format("{}: not a folder", workspace.string()));
  AttemptRef a;
  a.dir = a.workspace = workspace;
  a.name = fs::absolute(workspace).lexically_normal().filename().string();
  if (a.name.empty()) a.name = fs::absolute(workspace).lexically_normal().parent_path().filename().string();
  a.check_json = workspace / "check.json";
  const auto parts = split(a.name, "__");
  if (parts.size() >= 3) {
    a.task = parts[0];
    a.track = parts[1];
    a.level = level_from_folder(parts[2]);
  }
  apply_manifest(a);
  if (a.task.empty())
    throw std::runtime_error(fmt::format("{}: no manifest.json with a task, and the folder name is not <task>__<track>__<level>",
                                         workspace.string()));
  if (a.track.empty()) a.track = "cuda";
  return a;
}

AttemptMaterial read_attempt_material(const AttemptRef& a, std::size_t max_bytes) {
  AttemptMaterial m;
  m.design_md = read_file(a.workspace / "design.md", max_bytes, m.design_truncated);
  const fs::path sol = a.workspace / "solution";
  static const std::vector<std::string> kExt = {".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".inl", ".py"};
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(sol, ec)) {
    for (auto it = fs::recursive_directory_iterator(sol, fs::directory_options::none, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_symlink() || !it->is_regular_file()) continue;
      if (std::find(kExt.begin(), kExt.end(), it->path().extension().string()) == kExt.end()) continue;
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (m.code.size() >= max_bytes) {
      m.code_truncated = true;
      break;
    }
    bool cut = false;
    const std::string rel = f.lexically_relative(sol).string();
    std::string text = read_file(f, max_bytes - m.code.size(), cut);
    m.code += fmt::format("=== {} ===\n{}\n", rel, text);
    m.files.push_back(rel);
    m.code_truncated = m.code_truncated || cut;
  }
  return m;
}

}  // namespace d2k::capability
