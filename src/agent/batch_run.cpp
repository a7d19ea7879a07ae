#include "agent/batch_run.h"

#include <fmt/core.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "agent/batch_attempt.h"

namespace d2k::agent {

namespace fs = std::filesystem;

std::vector<fs::path> attempt_dirs(const fs::path& run_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / "attempts", ec))
    if (e.is_directory() && fs::exists(e.path() / "attempt.json")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path setup_run(const SetupInput& in, const fs::path& runs_dir) {
  const RunConfig& c = in.config;
  if (c.name.empty() || c.name.find('/') != std::string::npos || c.name.front() == '.')
    throw std::runtime_error(fmt::format("--name '{}': a run name is one folder name", c.name));
  const fs::path run_dir = runs_dir / c.name;
  if (fs::exists(run_dir))
    throw std::runtime_error(fmt::format("{}: the run exists (`d2k batch run {}` resumes it; remove the folder to start over)",
                                         run_dir.string(), c.name));
  // Every field of the template must expand before anything is written.
  std::map<std::string, std::string> probe = c.vars;
  for (const auto& name : builtin_placeholders()) probe[name] = "x";
  check_template(c.agent, probe);
  const fs::path tmp = runs_dir / ("." + c.name + ".setup");
  fs::remove_all(tmp);
  fs::create_directories(tmp / "attempts");
  for (const Task& task : in.tasks) {
    const std::string version = dataset_version(task, in.design_levels_file);
    for (const auto& track : c.tracks)
      for (const auto& level_name : c.levels) {
        const LevelInfo& level = parse_level(level_name);
        const WorkspaceKey key{task.def.name, track, level.level};
        build_workspace(task, in.levels, track, level, version, tmp / "workspaces" / key.folder(), false);
        for (int k = 1; k <= c.attempts; ++k) {
          AttemptRecord a;
          a.id = attempt_id(task.def.name, track, level, k);
          a.task = task.def.name;
          a.track = track;
          a.level = std::string(level.name);
          a.k = k;
          fs::create_directories(tmp / "attempts" / a.id);
          write_attempt(tmp / "attempts" / a.id, a);
        }
      }
  }
  write_atomic(tmp / "run.json", to_json(c).dump(2) + "\n");
  // Appears whole or not at all: a setup that failed half-way leaves no run behind.
  fs::rename(tmp, run_dir);
  return run_dir;
}

RunOutcome run_batch(const fs::path& run_dir, const RunOptions& opt) {
  const fs::path file = run_dir / "run.json";
  AttemptContext ctx;
  ctx.run_dir = run_dir;
  ctx.config = run_config_from_json(read_json(file), file.string());
  ctx.d2k_exe = opt.d2k_exe;
  ctx.stop = opt.stop;
  std::mutex log_mutex;
  ctx.log = [&](const std::string& line) {
    if (!opt.log) return;
    std::lock_guard<std::mutex> lock(log_mutex);
    opt.log(line);
  };
  const std::vector<fs::path> dirs = attempt_dirs(run_dir);
  std::atomic<std::size_t> next{0};
  std::mutex err_mutex;
  std::string first_error;
  auto worker = [&] {
    for (;;) {
      if (opt.stop && opt.stop->load()) return;
      const std::size_t i = next++;
      if (i >= dirs.size()) return;
      try {
        run_attempt(ctx, dirs[i]);
      } catch (const std::exception& e) {
        // A broken record or a full disk stops this attempt, not the run; the attempt stays as
        // it was written last and the error is reported.
        std::lock_guard<std::mutex> lock(err_mutex);
        ctx.log(fmt::format("{}: error: {}", dirs[i].filename().string(), e.what()));
        if (first_error.empty()) first_error = e.what();
      }
    }
  };
  const int n = std::max(1, std::min<int>(opt.concurrency > 0 ? opt.concurrency : ctx.config.concurrency,
                                          static_cast<int>(std::max<std::size_t>(dirs.size(), 1))));
  std::vector<std::thread> pool;
  for (int i = 0; i < n; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();

  RunOutcome out;
  out.interrupted = opt.stop && opt.stop->load();
  for (const auto& d : dirs) {
    const AttemptRecord a = read_attempt(d);
    ++out.total;
    if (a.state == AttemptState::done) ++out.done;
    else if (a.state == AttemptState::infra_error) ++out.infra_error;
    else ++out.unfinished;
  }
  if (!first_error.empty() && out.unfinished > 0 && !out.interrupted)
    throw std::runtime_error(first_error);
  return out;
}

}  // namespace d2k::agent
