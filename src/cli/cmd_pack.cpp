// d2k pack: the per-framework task tables (docs/pack.md). The rows are built in src/pack/; the
// Parquet beside each JSONL is written by scripts/pack_parquet.py with pyarrow.
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/commands.h"
#include "pack/pack.h"

namespace d2k::cli {

namespace {

namespace fs = std::filesystem;

struct PackArgs {
  std::string out = "tasks", tasks;
  bool jsonl_only = false;
};

/// $D2K_PACK_SCRIPT, else the source tree's scripts/pack_parquet.py.
fs::path parquet_script() {
  if (const char* s = std::getenv("D2K_PACK_SCRIPT"); s && *s) return s;
  return fs::path(D2K_SOURCE_DIR) / "scripts" / "pack_parquet.py";
}

/// Runs `python3 pack_parquet.py --columns ... TABLES` (no shell: paths are passed as they are).
int write_parquet(const std::vector<pack::PackedTable>& tables) {
  const fs::path script = parquet_script();
  if (!fs::is_regular_file(script))
    throw std::runtime_error(fmt::format("{}: no such script (set D2K_PACK_SCRIPT, or --jsonl-only)", script.string()));
  const char* py = std::getenv("PYTHON");
  std::string columns;
  for (auto c : pack::kColumns) columns += (columns.empty() ? "" : ",") + std::string(c);
  std::vector<std::string> args = {py && *py ? py : "python3", script.string(), "--columns", columns};
  for (const auto& t : tables) args.push_back(t.jsonl.string());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execvp(argv[0], argv.data());
    fmt::print(stderr, "d2k pack: cannot run {}\n", argv[0]);
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int pack_main(const Globals& g, const PackArgs& a) {
  std::vector<std::string> only;
  std::stringstream ss(a.tasks);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) only.push_back(t);
  const auto tables = pack::pack(dataset_dir(g), a.out, only);
  for (const auto& t : tables) fmt::print("{}: {} rows\n", t.jsonl.string(), t.rows);
  if (a.jsonl_only) return 0;
  const int rc = write_parquet(tables);
  if (rc != 0) fmt::print(stderr, "d2k pack: the Parquet tables were not written (pack_parquet.py exit {}); the JSONL are\n", rc);
  return rc == 0 ? 0 : 1;
}

}  // namespace

void add_pack(CLI::App& app, Globals& g, Runner& run) {
  auto a = std::make_shared<PackArgs>();
  auto* s = app.add_subcommand("pack", "task tables per framework: OUT/frontier_sol_{cuda,cutlass,triton}.{jsonl,parquet}");
  s->add_option("--out", a->out, "output folder (default tasks)");
  s->add_option("--tasks", a->tasks, "only these tasks (comma-separated; default all)");
  s->add_flag("--jsonl-only", a->jsonl_only, "write the JSONL only (no Python, no pyarrow)");
  s->callback([a, &g, &run] { run = [a, &g] { return pack_main(g, *a); }; });
}

}  // namespace d2k::cli
