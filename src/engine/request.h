#pragma once
/// One evaluation request: the unit a queue, a Slurm job or a batch runner executes on one GPU
/// (`d2k run REQ.json --out traces.jsonl`). `d2k check`, `d2k bench` and `d2k suite` only build
/// requests. The JSON form is docs/solution-abi.md's "Requests".
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/task.h"
#include "engine/evaluate.h"
#include "report/trace.h"

namespace d2k {

/// One target of a request: a built-in implementation (naive, expert, expert:<variant>,
/// library, reference) or `solution`, a candidate folder built by its track.
struct RequestTarget {
  std::string name;
  std::string track = "cuda";  ///< solution only: the track that builds and opens it
  std::string dir;             ///< solution only: the candidate's folder
  bool operator==(const RequestTarget&) const = default;
};

/// What a request may set of the pipeline (EvalOptions without the secret).
struct RequestOptions {
  std::optional<std::uint64_t> seed;  ///< pins the secret seed (reproducing a run); absent: fresh from the OS
  bool time = true;                   ///< false: correctness only (d2k check)
  bool graph = false;
  double max_time_s = 0;              ///< 0: the measure library's default
  std::string isolation = "worker";   ///< worker | none
  double call_timeout_s = 30;
  bool sample_checks = true;
  int rounds = 3, bench_rounds = 2;
  std::string dump_dir;
  bool operator==(const RequestOptions&) const = default;
};

struct EvalRequest {
  std::string dataset;                  ///< the dataset folder holding <task>/
  std::string task;
  std::vector<RequestTarget> targets;
  std::vector<std::string> workloads;   ///< only these uuids (empty: all, hidden ones too)
  RequestOptions options;
  std::optional<int> device;            ///< CUDA device ordinal among the visible ones (absent: 0)
  bool operator==(const EvalRequest&) const = default;
};

/// A request that does not parse or names something that does not exist; what() starts with
/// the field ("targets[1].track: unknown track 'x' (cuda, cutlass)").
struct RequestError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

nlohmann::json to_json(const EvalRequest& r);
/// Throws RequestError naming the field: a missing or mistyped field, an unknown key, an
/// unknown target or track, `solution` without `dir`.
EvalRequest request_from_json(const nlohmann::json& j);
/// Reads a request file; RequestError messages are prefixed with the file name.
EvalRequest read_request(const std::string& path);

/// Where traces go as they are produced.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// A final record.
  virtual void put(const Trace& t) = 0;
  /// A record complete but for the columns that compare targets (speed-ups, sol_score), marked
  /// `partial`, the moment its target finished the workload: put() brings its final form later
  /// in the same run, unless the run is cut first. Default: not kept.
  virtual void put_partial(const Trace&) {}
};
/// Keeps every trace in memory.
class CollectingSink final : public TraceSink {
 public:
  void put(const Trace& t) override { traces.push_back(t); }
  std::vector<Trace> traces;
};
/// One JSON object per line, flushed per trace (a crash keeps what was done).
class JsonLinesSink final : public TraceSink {
 public:
  explicit JsonLinesSink(std::ostream& os) : os_(os) {}
  void put(const Trace& t) override;

 private:
  std::ostream& os_;
};

/// What the machine offers the run (the CLI detects it; tests pin it).
struct RunContext {
  bool gpu = false;    ///< a CUDA GPU is usable: check and time the targets on it
  std::string exe;     ///< the d2k binary workers run (empty: this process's)
  Progress progress;
};

/// What a run did not do, and how it ended.
struct RunSummary {
  int records = 0, failed = 0;      ///< failed: records neither PASSED nor SKIPPED
  std::vector<std::string> skipped; ///< stages not run, one line each ("check and timing of naive: no GPU",
                                    ///< a bench row skipped and why)
};

/// Exit codes of check, bench, suite and run (README.md, "Exit codes").
inline constexpr int kExitPassed = 0;   ///< every requested stage ran and passed
inline constexpr int kExitFailed = 1;   ///< some record failed (its status and reason are printed)
inline constexpr int kExitError = 2;    ///< bad arguments, a request that does not parse, a harness fault
inline constexpr int kExitNoGpu = 3;    ///< nothing failed, but stages were not run: no GPU, or bench rows
                                        ///< skipped (naive, which judges them, is not built or failed)
int exit_code(const RunSummary& s);
/// Counts record t into s: every record, the failed ones, and a line per SKIPPED one (its reason).
void account(RunSummary& s, const Trace& t);

/// Makes `device` (an index into the visible devices) the only visible one, for this process
/// and the workers it starts, by narrowing CUDA_VISIBLE_DEVICES. Must run before the CUDA
/// runtime starts. Throws RequestError when the index is out of range.
void select_device(std::optional<int> device);

/// The pipeline's options for a request (the secret seed drawn here unless pinned).
EvalOptions options_from(const EvalRequest& r, const RunContext& ctx);

/// Runs a request on `task`: builds every solution through its track, runs the golden
/// reference through the host pipeline, checks and times the other targets on the GPU when
/// there is one, scores, and puts one trace per (target, workload) into `sink` (build failures
/// and host records as they happen, the GPU records once the run's speedups are known, each of
/// them earlier through put_partial as soon as its target finished the workload).
RunSummary run(const EvalRequest& r, const Task& task, TraceSink& sink, const RunContext& ctx);
/// The same, loading and validating the task from r.dataset first.
RunSummary run(const EvalRequest& r, TraceSink& sink, const RunContext& ctx);

}  // namespace d2k
