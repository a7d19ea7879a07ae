#pragma once
// The two synthetic runs of tests/fixtures/report (make_traces.py says what differs).
#include <string>

#include "report/runs.h"

namespace d2k::report::testing {

inline std::string fixture(const std::string& name) { return std::string(D2K_SOURCE_DIR) + "/tests/fixtures/report/" + name; }
inline Run run_a() { return read_run(fixture("run_a.jsonl")); }
inline Run run_b() { return read_run(fixture("run_b.jsonl")); }

}  // namespace d2k::report::testing
