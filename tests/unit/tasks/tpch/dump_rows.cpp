// Writes the rows of a task's check workloads for an independent engine: for each check workload,
// <out>/<uuid>.csv (one column per input, named as the input, integers as stored) and
// <out>/<uuid>.json ({"uuid", "scalars": {name: value}, "golden": {output: [values]}}), the golden
// from the task's reference.so on the same inputs. Used by duckdb_check.py for the TPC-H tasks;
// every input must be one-dimensional with an integer dtype.
// Usage: tpch_dump_rows TASK_DIR REFERENCE_SO OUT_DIR [SEED]
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/task_loader.h"
#include "core/workload.h"
#include "engine/host_backend.h"
#include "engine/plan.h"
#include "exec/loader.h"

namespace fs = std::filesystem;
using namespace d2k;

namespace {

std::int64_t element(const HostTensor& t, std::int64_t i) {
  switch (t.dtype) {
    case DType::i8: return t.as<std::int8_t>()[i];
    case DType::u8: return t.as<std::uint8_t>()[i];
    case DType::i16: return t.as<std::int16_t>()[i];
    case DType::i32: return t.as<std::int32_t>()[i];
    case DType::u32: return t.as<std::uint32_t>()[i];
    case DType::i64: return t.as<std::int64_t>()[i];
    default: throw std::runtime_error("tensor '" + t.name + "': only integer dtypes are dumped");
  }
}

nlohmann::json values(const HostTensor& t) {
  nlohmann::json a = nlohmann::json::array();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype == DType::f64) a.push_back(t.as<double>()[i]);
    else if (t.dtype == DType::f32) a.push_back(t.as<float>()[i]);
    else a.push_back(element(t, i));
  }
  return a;
}

void dump(const WorkloadPlan& plan, const std::vector<HostTensor>& in, const std::vector<HostTensor>& golden,
          const fs::path& out) {
  const std::string uuid = plan.workload.uuid;
  std::ofstream csv(out / (uuid + ".csv"));
  for (std::size_t c = 0; c < in.size(); ++c) csv << (c ? "," : "") << in[c].name;
  csv << "\n";
  const std::int64_t n = in.at(0).numel();
  for (const HostTensor& t : in)
    if (t.shape.size() != 1 || t.numel() != n) throw std::runtime_error("input '" + t.name + "' is not a column of " + std::to_string(n) + " rows");
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < in.size(); ++c) csv << (c ? "," : "") << element(in[c], i);
    csv << "\n";
  }
  nlohmann::json meta{{"uuid", uuid}, {"rows", n}, {"scalars", nlohmann::json::object()}, {"golden", nlohmann::json::object()}};
  for (const auto& s : plan.scalars) meta["scalars"][s.name] = s.is_float ? nlohmann::json(s.f) : nlohmann::json(s.i);
  for (const HostTensor& t : golden) meta["golden"][t.name] = values(t);
  std::ofstream(out / (uuid + ".json")) << meta.dump(1) << "\n";
  if (!csv) throw std::runtime_error("cannot write " + (out / (uuid + ".csv")).string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s TASK_DIR REFERENCE_SO OUT_DIR [SEED]\n", argv[0]);
    return 2;
  }
  try {
    Diagnostics diag;
    const Task task = load_task(argv[1], diag);
    if (!diag.ok()) throw std::runtime_error(std::string(argv[1]) + " does not load");
    LoadedImpl ref = load_impl(argv[2]);
    const fs::path out = argv[3];
    fs::create_directories(out);
    const std::uint64_t seed = argc > 4 ? std::stoull(argv[4]) : 1;
    int n = 0;
    for (const Workload& w : task.workloads) {
      if (w.role != WorkloadRole::check) continue;
      const WorkloadPlan plan = make_plan(task, w);
      const std::vector<HostTensor> in = generate_inputs_host(plan, seed);
      std::vector<HostTensor> golden = poisoned_outputs(plan, 0xA5);
      run_host(ref, plan, in, golden);
      dump(plan, in, golden, out);
      ++n;
    }
    std::printf("%d check workloads written to %s\n", n, out.c_str());
    return n > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tpch_dump_rows: %s\n", e.what());
    return 1;
  }
}
