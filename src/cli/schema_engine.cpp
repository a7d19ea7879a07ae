// The facts `d2k schema dump` takes from the engine and the tracks: their name lists, and
// documents the C++ writes with every optional part filled (the schema tests validate them, so a
// field added to a request or a trace must be added to its schema). Its own file: the engine's
// headers bring include/d2k/solution.h, whose d2k::data() clashes with the d2k::data namespace
// of the generator schema that cmd_schema.cpp reads.
#include "cli/schema_engine.h"

#include "engine/request.h"
#include "report/trace.h"
#include "tracks/target.h"
#include "tracks/track.h"

namespace d2k::cli {

std::vector<std::string> track_list() { return track_names(); }

std::vector<std::string> builtin_target_list() { return builtin_names(); }

bool is_builtin_target(const std::string& name) { return is_builtin_name(name); }

// A request with every field set, as `d2k run` reads it.
nlohmann::json example_request() {
  EvalRequest r;
  r.dataset = "dataset";
  r.task = "fused_add_rmsnorm";
  r.targets = {{"naive", "cuda", ""}, {"expert:vec8", "cuda", ""}, {"solution", "cutlass", "my_solution"}};
  r.workloads = {"fused_add_rmsnorm-check-7x264"};
  r.options.seed = 42;
  r.options.dump_dir = "dump";
  r.device = 1;
  return to_json(r);
}

// A trace with every optional part present, as a timed run on a GPU writes it.
nlohmann::json example_trace() {
  Trace t;
  t.task = "fused_add_rmsnorm";
  t.target = "expert";
  t.impl_path = "impl/fused_add_rmsnorm/expert.so";
  t.workload_uuid = "fused_add_rmsnorm-4096x4096";
  t.role = "bench";
  t.axes = {{"H", 4096}, {"T", 4096}};
  t.status = Status::REWARD_HACK;
  t.rule = "physical_floor";
  t.message = "faster than the speed of light";
  t.checks_fired = {"physical_floor: 1.2 us < T_SOL 3.4 us"};
  t.correctness = Correctness{"naive", 2, {OutputCheck{"out", "ulp", true, 0.01, 0.001, 1e-4, 3, 17, ""}}};
  Performance p;
  p.timer = "events_corrected";
  p.graph_median_us = 3.0;
  p.throttle_reasons = {"sw_power_cap"};
  p.kernels = {"rmsnorm_kernel"};
  p.violations = {{"kernel_set", "a sample launched another kernel"}};
  t.performance = p;
  Roofline rf;
  rf.bound = "memory";
  rf.memory_model = "stream";
  rf.ceilings_source = "calibrated";
  rf.speedup_vs_naive = rf.speedup_vs_expert = rf.speedup_vs_library = 1.5;
  rf.speedup_vs_torch_eager = rf.speedup_vs_torch_compile = rf.sol_score = 0.7;
  rf.flops = {{"fp32", 8.4e7}};
  rf.bytes = 1.2e8;
  rf.copy_bw = 4.0e12;
  rf.peaks = {{"fp32", 6.0e13}};
  t.roofline = rf;
  t.environment = {{"device", "NVIDIA H200"}};
  return to_json(t);
}

}  // namespace d2k::cli
