#pragma once
/// Trace interchange with FlashInfer-Bench (docs/report.md, "FlashInfer-Bench traces"): D2K
/// traces to their Trace and Workload JSON records and back.
///
/// Their evaluation statuses are PASSED, INCORRECT_SHAPE, INCORRECT_NUMERICAL, INCORRECT_DTYPE,
/// RUNTIME_ERROR, COMPILE_ERROR and TIMEOUT, and their schema allows `correctness` only with
/// PASSED and INCORRECT_NUMERICAL and `performance` only with PASSED. D2K's metrics (every
/// output check, the whole performance and roofline records) go under `correctness.extra`; what
/// must survive every status (the D2K status and rule, role, environment) goes on the last line
/// of `log` as `[d2k] {json}`, so that an import restores a D2K trace exactly. Non-finite numbers
/// are written as the strings "NaN", "Infinity" and "-Infinity", as their serializer does.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/trace.h"

namespace d2k::report {

/// FlashInfer-Bench's status for a D2K status (SKIPPED has none: nullopt).
std::optional<std::string> flashinfer_status(Status s);
/// D2K's status for one of theirs; nullopt for a name outside their set.
std::optional<Status> status_from_flashinfer(const std::string& s);

/// One D2K trace as their Trace record. `reference_us`: the naive target's mean time on the same
/// workload, their reference_latency_ms (0 when unknown). SKIPPED traces have no evaluation to
/// write: callers leave them out.
nlohmann::json to_flashinfer_trace(const Trace& t, std::optional<double> reference_us);

/// The workload record (solution and evaluation null) of a trace's workload; `inputs` names the
/// task's inputs, each written as {"type": "random"} (D2K generates every input).
nlohmann::json to_flashinfer_workload(const Trace& t, const std::vector<std::string>& inputs);

/// Their records for a set of traces, grouped by definition (task): traces and workloads (each
/// workload once). `inputs_by_task` supplies input names (empty when unknown).
struct FlashInferSet {
  std::map<std::string, std::vector<nlohmann::json>> traces, workloads;
  int skipped = 0;  ///< SKIPPED traces left out
};
FlashInferSet to_flashinfer(const std::vector<Trace>& traces,
                            const std::map<std::string, std::vector<std::string>>& inputs_by_task = {});

/// A D2K trace from their Trace record; nullopt for a workload-only record (no solution and no
/// evaluation). Throws std::runtime_error naming the field that is missing or malformed.
std::optional<Trace> from_flashinfer_trace(const nlohmann::json& j);

/// One JSON line with non-finite numbers as strings (their encoding).
std::string dump_flashinfer(const nlohmann::json& j);
/// Parses one of their JSON lines, turning "NaN"/"Infinity"/"-Infinity" back into numbers
/// wherever a number is expected (not in free-text fields).
nlohmann::json parse_flashinfer(const std::string& line);

}  // namespace d2k::report
