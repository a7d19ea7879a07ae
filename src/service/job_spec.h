#pragma once
/// What a client asks the service to evaluate (the body of POST /v1/evaluations) and the limits
/// on it. One parser serves the API (JSON or multipart) and the worker (which re-reads the stored
/// spec), so a spec is checked by the same rules wherever it is read. Every refusal is an ApiError
/// naming the field: `files["../x"]: a file name may not contain '..'`.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "service/api_error.h"

namespace d2k::service {

struct Limits {
  std::size_t max_body_bytes = 16u << 20;   ///< the whole HTTP body (JSON with base64 is ~4/3 of the files)
  std::size_t max_files = 64;
  std::size_t max_file_bytes = 4u << 20;
  std::size_t max_total_file_bytes = 8u << 20;
  std::size_t max_path_chars = 128;
  int max_path_depth = 4;
  std::size_t max_targets = 16;
  std::size_t max_workloads = 256;
};

struct JobSpec {
  std::string task;
  std::string track = "cuda";
  std::vector<std::string> targets{"solution"};
  std::vector<std::string> workloads;
  nlohmann::json options = nlohmann::json::object();  ///< the keys of kOptionKeys only
  std::map<std::string, std::string> files;           ///< relative path -> bytes
  bool operator==(const JobSpec&) const = default;
};

/// Parses a JSON body: {"task", "track"?, "targets"?, "workloads"?, "options"?, "files": {path: base64}}.
JobSpec spec_from_json_body(const std::string& body, const Limits& lim);
/// The same checks on an already parsed object; `files_base64` false: files are given raw (the
/// multipart path, where the parts carry the bytes).
JobSpec spec_from_json(const nlohmann::json& j, const Limits& lim, bool files_base64 = true);
/// The stored form (files base64, so the row is text): spec_from_json(to_json(s)) == s.
nlohmann::json to_json(const JobSpec& s);

/// A file name a job may hold: relative, components of [A-Za-z0-9._-] (no leading '.'), no '..',
/// at most max_path_depth components and max_path_chars characters. Throws ApiError naming `field`.
void check_file_name(const std::string& name, const Limits& lim, const std::string& field);

/// The request for `d2k run` (docs/solution-abi.md, "Requests") that evaluates `s` from the
/// folder `solution_dir` on the dataset `dataset`.
nlohmann::json eval_request(const JobSpec& s, const std::string& dataset, const std::string& solution_dir);

}  // namespace d2k::service
