// d2k audit release: what must not be published from a checkout (docs/release-audit.md).
// Options here, the rules in src/audit/.
#include <fmt/core.h>

#include "audit/audit.h"
#include "cli/commands.h"

namespace d2k::cli {

namespace {

int audit_main(const audit::AuditOptions& opt) {
  const auto findings = audit::audit_release(opt);
  for (const auto& f : findings) fmt::print("{}\n", f.format());
  if (findings.empty()) {
    fmt::print("d2k audit release: {}: clean{}\n", opt.root.string(), opt.history ? " (working tree and every commit)" : "");
    return 0;
  }
  fmt::print(stderr, "d2k audit release: {} finding(s); fix them, or add known-safe ones to the allowlist\n", findings.size());
  return 1;
}

}  // namespace

void add_audit(CLI::App& app, Globals&, Runner& run) {
  auto opt = std::make_shared<audit::AuditOptions>();
  auto* audit = app.add_subcommand("audit", "checks before publishing");
  audit->require_subcommand(1);
  auto* rel = audit->add_subcommand("release", "secrets, run records, workspaces with solutions, binaries: exit 1 listing each");
  rel->add_option("path", opt->root, "the checkout (default .)");
  rel->add_flag("--history", opt->history, "also every blob of every commit reachable from any ref");
  rel->add_option("--allowlist", opt->allowlist, "known-safe hits (default PATH/config/audit-allowlist.txt)");
  rel->callback([opt, &run] { run = [opt] { return audit_main(*opt); }; });
}

}  // namespace d2k::cli
