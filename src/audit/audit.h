#pragma once
/// `d2k audit release [--history] [PATH]` (docs/release-audit.md): what must not be published
/// from a checkout — secrets, run records, agent workspaces holding solutions, binaries — in the
/// files git would publish (tracked, plus untracked ones not ignored), and with --history in
/// every blob of every commit reachable from any ref.
#include <filesystem>
#include <string>
#include <vector>

namespace d2k::audit {

struct Finding {
  std::string commit;  ///< empty: the working tree
  std::string path;    ///< relative to the checkout, '/'-separated
  int line = 0;        ///< 0: the whole file
  std::string rule, detail;
  /// `[commit:]path[:line]: rule: detail`
  std::string format() const;
};

/// Known-safe hits: one `PATH-GLOB [RULE]` per line (`#` comments), the glob matched against the
/// relative path as fnmatch(3) does (without FNM_PATHNAME, so `*` crosses '/'); no rule: any.
class Allowlist {
 public:
  /// An empty list when `file` does not exist; throws naming file:line on a malformed line.
  static Allowlist load(const std::filesystem::path& file);
  bool allows(const Finding& f) const;

 private:
  struct Entry {
    std::string glob, rule;
  };
  std::vector<Entry> entries_;
};

struct AuditOptions {
  std::filesystem::path root = ".";
  bool history = false;
  std::filesystem::path allowlist;  ///< empty: <root>/config/audit-allowlist.txt when present
};

/// Every finding not allowed, in path order (working tree) then commit order (history, one
/// finding per blob and path: the newest commit that holds it). Throws std::runtime_error when
/// `root` is not a folder, or with --history when it is not a git checkout.
std::vector<Finding> audit_release(const AuditOptions& opt);

}  // namespace d2k::audit
