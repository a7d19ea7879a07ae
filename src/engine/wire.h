#pragma once
/// The protocol between the parent's WorkerRunner (worker_client.cpp) and the worker process
/// (worker_process.cpp): one JSON object per line over the channel of exec/worker.h. The parent
/// sends {"cmd": ...}; the worker answers each command with exactly one {"type": ...} (a timing
/// request is a dialogue: "prepare" / "prepared" pairs, then "timed"). Every message name is
/// declared here once; both sides use these names.
#include <nlohmann/json.hpp>

#include "engine/plan.h"
#include "engine/runner.h"
#include "measure/timer.h"

namespace d2k::wire {

/// Parent → worker.
namespace cmd {
inline constexpr const char* map = "map";                ///< {buffers:[{id,bytes}]} + one descriptor each
inline constexpr const char* unmap = "unmap";            ///< {ids}: drop the mappings of buffers the parent freed
inline constexpr const char* plan = "plan";              ///< {plan}: bind the target to a workload
inline constexpr const char* call = "call";              ///< {ins, outs}: one untimed call
inline constexpr const char* time = "time";              ///< {sets, options}: the timing loop
inline constexpr const char* prepared = "prepared";      ///< answer to "prepare": the call's inputs are ready
inline constexpr const char* batch = "batch";            ///< {sets, slab, stride, offsets, calls}: capture a timed batch
inline constexpr const char* batch_run = "batch_run";    ///< run the captured batch
inline constexpr const char* exit = "exit";              ///< end the worker
inline constexpr const char* load = "load";              ///< answer to "baseline": load the candidate now
}  // namespace cmd

/// Worker → parent.
namespace reply {
/// First message: the harness and the track's runtime are up, no candidate code has run; the
/// worker waits for "load" so that the parent counts the worker's threads itself meanwhile.
inline constexpr const char* baseline = "baseline";        ///< {threads}
inline constexpr const char* ready = "ready";              ///< after load: {lockdown, threads}
inline constexpr const char* load_failed = "load_failed";  ///< {status, error}
inline constexpr const char* mapped = "mapped";
inline constexpr const char* unmapped = "unmapped";
inline constexpr const char* planned = "planned";          ///< {workspace}
inline constexpr const char* called = "called";            ///< {threads_after}
inline constexpr const char* prepare = "prepare";          ///< {call}: asks the parent to prepare call i
inline constexpr const char* timed = "timed";              ///< a TimedOutcome
inline constexpr const char* batch_ready = "batch_ready";  ///< {graph, unjoined, note}
inline constexpr const char* batch_done = "batch_done";
inline constexpr const char* error = "error";              ///< {status, fatal, error}
}  // namespace reply

nlohmann::json plan_to_json(const WorkloadPlan& p);
WorkloadPlan plan_from_json(const nlohmann::json& j);
nlohmann::json options_to_json(const measure::MeasureOptions& mo);
measure::MeasureOptions options_from_json(const nlohmann::json& j);
nlohmann::json timed_to_json(const TimedOutcome& t);
TimedOutcome timed_from_json(const nlohmann::json& j);

}  // namespace d2k::wire
