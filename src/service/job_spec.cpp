#include "service/job_spec.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "service/codec.h"

namespace d2k::service {

using nlohmann::json;

namespace {

ApiError bad(const std::string& field, const std::string& what) {
  return ApiError(400, "INVALID_FIELD", fmt::format("{}: {}", field, what));
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == ':';
}

/// A task, track, target or workload name: short, printable, no path characters.
std::string name_field(const json& j, const std::string& field, std::size_t max_chars = 128) {
  if (!j.is_string()) throw bad(field, fmt::format("must be a string, not {}", j.type_name()));
  const auto& s = j.get_ref<const std::string&>();
  if (s.empty() || s.size() > max_chars) throw bad(field, fmt::format("must have 1 to {} characters", max_chars));
  if (!std::all_of(s.begin(), s.end(), is_name_char) || s[0] == '.')
    throw bad(field, "only letters, digits and _ - . : are allowed (not first '.')");
  return s;
}

std::vector<std::string> name_list(const json& j, const std::string& field, std::size_t max_items) {
  if (!j.is_array()) throw bad(field, fmt::format("must be an array of strings, not {}", j.type_name()));
  if (j.size() > max_items) throw bad(field, fmt::format("at most {} entries ({} given)", max_items, j.size()));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < j.size(); ++i) out.push_back(name_field(j[i], fmt::format("{}[{}]", field, i)));
  return out;
}

/// The pipeline options a client may set, with their type and range; isolation, dump folders
/// and devices are the service's to choose.
json checked_options(const json& j) {
  if (!j.is_object()) throw bad("options", fmt::format("must be an object, not {}", j.type_name()));
  json out = json::object();
  for (auto& [k, v] : j.items()) {
    const std::string f = "options." + k;
    if (k == "time" || k == "graph" || k == "sample_checks") {
      if (!v.is_boolean()) throw bad(f, "must be a boolean");
    } else if (k == "max_time_s" || k == "call_timeout_s") {
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 600) throw bad(f, "must be a number in [0, 600]");
      if (k == "call_timeout_s" && v.get<double>() <= 0) throw bad(f, "must be positive");
    } else if (k == "rounds" || k == "bench_rounds") {
      if (!v.is_number_integer() || v.get<std::int64_t>() < (k == "rounds" ? 1 : 0) || v.get<std::int64_t>() > 20)
        throw bad(f, "must be an integer in [1, 20] (bench_rounds: [0, 20])");
    } else if (k == "seed") {
      if (!v.is_number_unsigned()) throw bad(f, "must be a non-negative integer");
    } else {
      throw ApiError(400, "UNKNOWN_FIELD",
                     fmt::format("{}: unknown option (time, graph, sample_checks, max_time_s, call_timeout_s, "
                                 "rounds, bench_rounds, seed)", f));
    }
    out[k] = v;
  }
  return out;
}

void add_file(JobSpec& s, const std::string& name, std::string bytes, const Limits& lim, std::size_t& total) {
  const std::string field = fmt::format("files[\"{}\"]", name.substr(0, 64));
  check_file_name(name, lim, field);
  if (s.files.size() >= lim.max_files) throw ApiError(413, "TOO_MANY_FILES", fmt::format("files: at most {}", lim.max_files));
  if (bytes.size() > lim.max_file_bytes)
    throw ApiError(413, "FILE_TOO_LARGE", fmt::format("{}: {} bytes, the limit is {}", field, bytes.size(), lim.max_file_bytes));
  total += bytes.size();
  if (total > lim.max_total_file_bytes)
    throw ApiError(413, "FILES_TOO_LARGE", fmt::format("files: more than {} bytes in all", lim.max_total_file_bytes));
  if (!s.files.emplace(name, std::move(bytes)).second) throw bad(field, "given twice");
}

}  // namespace

void check_file_name(const std::string& name, const Limits& lim, const std::string& field) {
  if (name.empty() || name.size() > lim.max_path_chars)
    throw bad(field, fmt::format("a file name has 1 to {} characters", lim.max_path_chars));
  int depth = 0;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part(name.data() + start, end - start);
    if (part.empty()) throw bad(field, "a file name is relative, without empty components ('/' first, '//', '/' last)");
    if (part == "." || part == "..") throw bad(field, "a file name may not contain '.' or '..' components");
    if (part[0] == '.') throw bad(field, "a component may not start with '.'");
    for (char c : part)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
            c == '.'))
        throw bad(field, "a file name has only letters, digits, '_', '-', '.' and '/'");
    if (++depth > lim.max_path_depth) throw bad(field, fmt::format("at most {} folders deep", lim.max_path_depth));
    start = end + 1;
  }
}

JobSpec spec_from_json(const json& j, const Limits& lim, bool files_base64) {
  if (!j.is_object()) throw ApiError(400, "INVALID_JSON", fmt::format("body: must be a JSON object, not {}", j.type_name()));
  JobSpec s;
  for (auto& [k, v] : j.items()) {
    if (k == "task") s.task = name_field(v, "task", 64);
    else if (k == "track") s.track = name_field(v, "track", 32);
    else if (k == "targets") s.targets = name_list(v, "targets", lim.max_targets);
    else if (k == "workloads") s.workloads = name_list(v, "workloads", lim.max_workloads);
    else if (k == "options") s.options = checked_options(v);
    else if (k == "files") {
      if (!v.is_object()) throw bad("files", fmt::format("must be an object of file name -> base64, not {}", v.type_name()));
      if (!files_base64 && !v.empty()) throw bad("files", "multipart requests carry files as parts, not in the JSON");
      std::size_t total = 0;
      for (auto& [name, content] : v.items()) {
        const std::string field = fmt::format("files[\"{}\"]", name.substr(0, 64));
        if (!content.is_string()) throw bad(field, "must be a base64 string");
        auto bytes = base64_decode(content.get_ref<const std::string&>());
        if (!bytes) throw bad(field, "is not valid base64");
        add_file(s, name, std::move(*bytes), lim, total);
      }
    } else {
      throw ApiError(400, "UNKNOWN_FIELD",
                     fmt::format("{}: unknown field (task, track, targets, workloads, options, files)", k.substr(0, 64)));
    }
  }
  if (s.task.empty()) throw ApiError(400, "MISSING_FIELD", "task: required");
  if (s.targets.empty()) throw bad("targets", "at least one target");
  const bool wants_solution = std::find(s.targets.begin(), s.targets.end(), "solution") != s.targets.end();
  if (wants_solution && files_base64 && s.files.empty())
    throw ApiError(400, "MISSING_FIELD", "files: the target 'solution' needs the solution's files");
  return s;
}

JobSpec spec_from_json_body(const std::string& body, const Limits& lim) {
  if (body.size() > lim.max_body_bytes)
    throw ApiError(413, "PAYLOAD_TOO_LARGE", fmt::format("body: {} bytes, the limit is {}", body.size(), lim.max_body_bytes));
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) throw ApiError(400, "INVALID_JSON", "body: not valid JSON");
  return spec_from_json(j, lim);
}

json to_json(const JobSpec& s) {
  json files = json::object();
  for (auto& [name, bytes] : s.files) files[name] = base64_encode(bytes);
  json j = {{"task", s.task}, {"track", s.track}, {"targets", s.targets}, {"options", s.options}, {"files", files}};
  if (!s.workloads.empty()) j["workloads"] = s.workloads;
  return j;
}

json eval_request(const JobSpec& s, const std::string& dataset, const std::string& solution_dir) {
  json targets = json::array();
  for (const auto& t : s.targets) {
    if (t == "solution") targets.push_back({{"name", t}, {"track", s.track}, {"dir", solution_dir}});
    else targets.push_back({{"name", t}});
  }
  json options = s.options;
  options["isolation"] = "worker";  // the service never loads a candidate into d2k itself
  json r = {{"task", s.task}, {"targets", targets}, {"options", options}};
  if (!dataset.empty()) r["dataset"] = dataset;
  if (!s.workloads.empty()) r["workloads"] = s.workloads;
  return r;
}

}  // namespace d2k::service
