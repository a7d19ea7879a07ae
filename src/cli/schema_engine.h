#pragma once
/// What `d2k schema dump` takes from the engine and the tracks (cli/schema_engine.cpp).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace d2k::cli {

/// The registered tracks (tracks/track.h track_names).
std::vector<std::string> track_list();
/// The built-in target names, and whether a name is one (tracks/target.h).
std::vector<std::string> builtin_target_list();
bool is_builtin_target(const std::string& name);

/// A request with every field set, as `d2k run` reads it (engine/request.h to_json).
nlohmann::json example_request();
/// A trace with every optional part present, as a timed run on a GPU writes it (report/trace.h).
nlohmann::json example_trace();

}  // namespace d2k::cli
