#include "audit/audit.h"

#include <fmt/core.h>
#include <fnmatch.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "audit/git.h"
#include "audit/rules.h"
#include "exec/sha256.h"

namespace d2k::audit {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string Finding::format() const {
  std::string where = commit.empty() ? path : fmt::format("{}:{}", commit.substr(0, 12), path);
  if (line > 0) fmt::format_to(std::back_inserter(where), ":{}", line);
  return fmt::format("{}: {}: {}", where, rule, detail);
}

Allowlist Allowlist::load(const fs::path& file) {
  Allowlist a;
  std::ifstream in(file);
  if (!in) return a;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream ss(line);
    Entry e;
    if (!(ss >> e.glob)) continue;
    ss >> e.rule;
    if (std::string extra; ss >> extra)
      throw std::runtime_error(fmt::format("{}:{}: expected PATH-GLOB [RULE], got more", file.string(), n));
    a.entries_.push_back(e);
  }
  return a;
}

bool Allowlist::allows(const Finding& f) const {
  return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return ::fnmatch(e.glob.c_str(), f.path.c_str(), 0) == 0 && (e.rule.empty() || e.rule == f.rule);
  });
}

namespace {

/// What one file holds, checked by every rule that reads a single file.
std::vector<Hit> scan_file(const std::string& path, std::string_view bytes, std::size_t size) {
  std::vector<Hit> hits = scan_path(path);
  for (auto& h : scan_binary(bytes.substr(0, 8), size)) hits.push_back(std::move(h));
  if (size <= kLargeFileBytes)
    for (auto& h : scan_secrets(bytes)) hits.push_back(std::move(h));
  return hits;
}

/// A workspace (docs/runlayout: manifest.json with task, track, level and the sha256 of each
/// file as built) whose solution/ differs from what was built holds an agent's solution.
/// `sha_of(rel)` gives the sha256 of the file at a path relative to the checkout (empty: absent);
/// `files` lists the checkout's paths.
std::vector<Finding> check_workspace(const std::string& manifest_path, std::string_view manifest_text,
                                     const std::vector<std::string>& files,
                                     const std::function<std::string(const std::string&)>& sha_of) {
  std::vector<Finding> out;
  const json m = json::parse(manifest_text, nullptr, false);
  if (!m.is_object() || !m.contains("task") || !m.contains("level") || !m.contains("files") || !m["files"].is_object())
    return out;
  const std::string dir = manifest_path.size() > 13 ? manifest_path.substr(0, manifest_path.size() - 13) : "";  // "manifest.json"
  const std::string solution = dir + "solution/";
  for (const auto& path : files) {
    if (!path.starts_with(solution)) continue;
    const std::string rel = path.substr(dir.size()), rel_solution = path.substr(solution.size());
    const json& listed = m["files"].contains(rel) ? m["files"][rel] : m["files"].contains(rel_solution) ? m["files"][rel_solution] : json();
    if (!listed.is_string()) out.push_back({"", path, 0, "workspace-solution", "a file the workspace was not built with"});
    else if (listed.get<std::string>() != sha_of(path))
      out.push_back({"", path, 0, "workspace-solution", "changed since the workspace was built (an agent's solution)"});
  }
  return out;
}

std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The files git would publish: tracked plus untracked-not-ignored; every file outside git.
std::vector<std::string> publishable_files(const fs::path& root) {
  std::vector<std::string> out;
  if (is_git_checkout(root)) {
    for (auto& p : split_nul(git_output(root, {"ls-files", "-z", "-co", "--exclude-standard"})))
      if (fs::is_regular_file(root / p)) out.push_back(std::move(p));
  } else {
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory() && it->path().filename() == ".git") it.disable_recursion_pending();
      else if (it->is_regular_file()) out.push_back(fs::relative(it->path(), root).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Finding> audit_tree(const fs::path& root) {
  std::vector<Finding> out;
  const auto files = publishable_files(root);
  for (const auto& path : files) {
    const auto size = static_cast<std::size_t>(fs::file_size(root / path));
    std::string bytes;
    if (size <= kLargeFileBytes) {
      bytes = read_whole(root / path);
    } else {
      std::ifstream in(root / path, std::ios::binary);
      bytes.resize(8);
      in.read(bytes.data(), 8);
    }
    for (auto& h : scan_file(path, bytes, size)) out.push_back({"", path, h.line, h.rule, h.detail});
    if (path == "manifest.json" || path.ends_with("/manifest.json"))
      for (auto& f : check_workspace(path, bytes, files, [&](const std::string& p) { return sha256_hex(read_whole(root / p)); }))
        out.push_back(std::move(f));
  }
  return out;
}

/// Every blob of every commit reachable from a ref. Each blob's content is scanned once; a hit
/// is reported once per (blob, path), with the newest commit holding it.
std::vector<Finding> audit_history(const fs::path& root) {
  if (!is_git_checkout(root)) throw std::runtime_error(fmt::format("--history: {} is not a git checkout", root.string()));
  std::vector<std::string> commits;
  std::istringstream rl(git_output(root, {"rev-list", "--all"}));
  for (std::string c; std::getline(rl, c);)
    if (!c.empty()) commits.push_back(c);

  std::map<std::string, std::vector<TreeEntry>> trees;
  std::map<std::string, std::size_t> blob_size;
  std::set<std::string> keep_text;  // blobs a workspace check reads again
  for (const auto& c : commits) {
    trees[c] = ls_tree(root, c);
    for (const auto& e : trees[c]) {
      blob_size[e.sha] = e.size;
      if (e.path.ends_with("manifest.json") || e.path.find("/solution/") != std::string::npos) keep_text.insert(e.sha);
    }
  }
  std::map<std::string, std::vector<Hit>> content_hits;  // sha -> hits of the bytes
  std::map<std::string, std::string> text, sha256_of;
  std::vector<std::string> shas;
  for (const auto& [sha, size] : blob_size) shas.push_back(sha);
  cat_blobs(root, shas, [&](const std::string& sha, std::string_view bytes) {
    const std::size_t size = blob_size[sha];
    auto hits = scan_binary(bytes.substr(0, 8), size);
    if (size <= kLargeFileBytes)
      for (auto& h : scan_secrets(bytes)) hits.push_back(std::move(h));
    content_hits[sha] = std::move(hits);
    sha256_of[sha] = sha256_hex(bytes);
    if (keep_text.count(sha)) text[sha] = std::string(bytes);
  });

  std::vector<Finding> out;
  std::set<std::pair<std::string, std::string>> reported;  // (sha, path)
  for (const auto& c : commits) {
    std::map<std::string, std::string> sha_at;  // path -> blob
    std::vector<std::string> paths;
    for (const auto& e : trees[c]) {
      sha_at[e.path] = e.sha;
      paths.push_back(e.path);
    }
    for (const auto& e : trees[c]) {
      if (e.path.ends_with("manifest.json") && text.count(e.sha))
        for (auto& f : check_workspace(e.path, text[e.sha], paths, [&](const std::string& p) { return sha256_of[sha_at[p]]; }))
          if (reported.insert({sha_at[f.path], f.path}).second) {
            f.commit = c;
            out.push_back(std::move(f));
          }
      if (!reported.insert({e.sha, e.path}).second) continue;
      for (const auto& h : scan_path(e.path)) out.push_back({c, e.path, h.line, h.rule, h.detail});
      for (const auto& h : content_hits[e.sha]) out.push_back({c, e.path, h.line, h.rule, h.detail});
    }
  }
  return out;
}

}  // namespace

std::vector<Finding> audit_release(const AuditOptions& opt) {
  if (!fs::is_directory(opt.root)) throw std::runtime_error(fmt::format("{}: no such folder", opt.root.string()));
  const fs::path allow_file = opt.allowlist.empty() ? opt.root / "config" / "audit-allowlist.txt" : opt.allowlist;
  if (!opt.allowlist.empty() && !fs::is_regular_file(allow_file))
    throw std::runtime_error(fmt::format("--allowlist {}: no such file", allow_file.string()));
  const Allowlist allow = Allowlist::load(allow_file);
  std::vector<Finding> all = audit_tree(opt.root);
  if (opt.history)
    for (auto& f : audit_history(opt.root)) all.push_back(std::move(f));
  std::erase_if(all, [&](const Finding& f) { return allow.allows(f); });
  return all;
}

}  // namespace d2k::audit
