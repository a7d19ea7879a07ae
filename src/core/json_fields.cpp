#include "core/json_fields.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace d2k::detail {

std::string join_path(std::string_view base, std::string_view key) {
  if (base.empty()) return std::string(key);
  return fmt::format("{}.{}", base, key);
}

std::string index_path(std::string_view base, std::size_t i) { return fmt::format("{}[{}]", base, i); }

void FieldReader::error(const std::string& field, const std::string& msg) const {
  if (diag_) diag_->error(file_, line_, field, msg);
}

void FieldReader::warning(const std::string& field, const std::string& msg) const {
  if (diag_) diag_->warning(file_, line_, field, msg);
}

namespace {
const char* type_word(const ordered_json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}
}  // namespace

bool FieldReader::object(const ordered_json& j, const std::string& field) const {
  if (j.is_object()) return true;
  error(field, fmt::format("expected an object, found {}", type_word(j)));
  return false;
}

std::optional<std::string> FieldReader::string(const ordered_json& obj, std::string_view key, const std::string& path,
                                               bool required) const {
  const std::string field = join_path(path, key);
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) error(field, "missing required field");
    return std::nullopt;
  }
  if (!it->is_string()) {
    error(field, fmt::format("expected a string, found {}", type_word(*it)));
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::optional<std::int64_t> json_integer(const ordered_json& j) {
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return j.get<std::int64_t>();
  }
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18) return static_cast<std::int64_t>(v);
  }
  return std::nullopt;
}

std::optional<std::int64_t> FieldReader::integer(const ordered_json& obj, std::string_view key,
                                                 const std::string& path, bool required) const {
  const std::string field = join_path(path, key);
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) error(field, "missing required field");
    return std::nullopt;
  }
  auto v = json_integer(*it);
  if (!v) {
    error(field, it->is_number() ? fmt::format("expected an integer, found {}", it->dump())
                                 : fmt::format("expected an integer, found {}", type_word(*it)));
  }
  return v;
}

std::optional<bool> FieldReader::boolean(const ordered_json& obj, std::string_view key, const std::string& path,
                                          bool required) const {
  const std::string field = join_path(path, key);
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) error(field, "missing required field");
    return std::nullopt;
  }
  if (!it->is_boolean()) {
    error(field, fmt::format("expected true or false, found {}", type_word(*it)));
    return std::nullopt;
  }
  return it->get<bool>();
}

std::optional<double> FieldReader::number(const ordered_json& obj, std::string_view key, const std::string& path,
                                          bool required) const {
  const std::string field = join_path(path, key);
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) error(field, "missing required field");
    return std::nullopt;
  }
  if (!it->is_number()) {
    error(field, fmt::format("expected a number, found {}", type_word(*it)));
    return std::nullopt;
  }
  return it->get<double>();
}

void FieldReader::known_keys(const ordered_json& obj, const std::string& path,
                             std::initializer_list<std::string_view> known) const {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool found = false;
    for (auto k : known) found = found || it.key() == k;
    if (!found) warning(join_path(path, it.key()), "unknown field (ignored)");
  }
}

std::optional<std::string> read_text(const std::filesystem::path& path, Diagnostics& diag) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    diag.error(path.string(), 0, "", "file is missing");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) {
    diag.error(path.string(), 0, "", "cannot read file");
    return std::nullopt;
  }
  return ss.str();
}

std::optional<ordered_json> parse_json(const std::string& text, Diagnostics& diag, const std::string& file,
                                       int jsonl_line) {
  // Track object keys per nesting level: nlohmann keeps the last of duplicate keys silently,
  // so two inputs with the same name would otherwise vanish into one.
  struct Frame {
    bool is_array;
    std::string path;
    std::set<std::string> keys;
    std::string key;
    std::size_t index = 0;
  };
  std::vector<Frame> stack;
  std::vector<std::string> duplicates;
  auto child_path = [&]() -> std::string {
    if (stack.empty()) return "";
    Frame& f = stack.back();
    if (f.is_array) return index_path(f.path, f.index++);
    return join_path(f.path, f.key);
  };
  const ordered_json::parser_callback_t cb = [&](int, ordered_json::parse_event_t ev, ordered_json& parsed) {
    switch (ev) {
      case ordered_json::parse_event_t::object_start: {
        std::string p = child_path();
        stack.push_back({false, std::move(p), {}, {}, 0});
        break;
      }
      case ordered_json::parse_event_t::array_start: {
        std::string p = child_path();
        stack.push_back({true, std::move(p), {}, {}, 0});
        break;
      }
      case ordered_json::parse_event_t::key:
        if (!stack.empty()) {
          Frame& f = stack.back();
          f.key = parsed.get<std::string>();
          if (!f.keys.insert(f.key).second) duplicates.push_back(join_path(f.path, f.key));
        }
        break;
      case ordered_json::parse_event_t::value:
        if (!stack.empty() && stack.back().is_array) ++stack.back().index;
        break;
      case ordered_json::parse_event_t::object_end:
      case ordered_json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
    }
    return true;
  };

  try {
    ordered_json j = ordered_json::parse(text, cb);
    for (const auto& d : duplicates)
      diag.error(file, jsonl_line, d, "duplicate key (JSON keeps only the last one)");
    return j;
  } catch (const ordered_json::parse_error& e) {
    // e.byte is 1-based: the offending character is text[e.byte - 1].
    const std::size_t idx = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    int line = 1;
    std::size_t line_start = 0;
    for (std::size_t k = 0; k < idx; ++k)
      if (text[k] == '\n') { ++line; line_start = k + 1; }
    const std::size_t column = idx - line_start + 1;
    // Keep nlohmann's explanation, drop its own prefix ("[json.exception...] parse error at ...: ").
    std::string what = e.what();
    const auto pe = what.find("parse error");
    if (pe != std::string::npos) {
      const auto colon = what.find(": ", pe);
      if (colon != std::string::npos) what = what.substr(colon + 2);
    }
    if (jsonl_line > 0)
      diag.error(file, jsonl_line, "", fmt::format("JSON syntax error at column {}: {}", column, what));
    else
      diag.error(file, line, "", fmt::format("JSON syntax error at byte {} (line {}, column {}): {}", e.byte, line,
                                             column, what));
    return std::nullopt;
  }
}

GeneratorSpec parse_generator(const ordered_json& j, const FieldReader& r, const std::string& path, bool override_) {
  GeneratorSpec g;
  if (!r.object(j, path)) return g;
  g.kind = r.string(j, "kind", path, !override_).value_or("");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "kind") g.params[it.key()] = it.value();
  return g;
}

CompareSpec parse_compare(const ordered_json& j, const FieldReader& r, const std::string& path, bool override_) {
  CompareSpec c;
  if (!r.object(j, path)) return c;
  c.raw = j;
  if (auto v = r.string(j, "rule", path, !override_)) c.rule = *v;
  if (auto v = r.number(j, "atol", path, false)) c.atol = *v;
  if (auto v = r.number(j, "rtol", path, false)) c.rtol = *v;
  if (auto v = r.number(j, "ulps", path, false)) c.ulps = *v;
  if (auto v = r.number(j, "max_ulps", path, false)) c.max_ulps = *v;
  if (auto v = r.number(j, "matched_ratio", path, false)) c.matched_ratio = *v;
  if (auto v = r.number(j, "max_error_cap", path, false)) c.max_error_cap = *v;
  if (auto v = r.number(j, "tol", path, false)) c.tol = *v;
  if (auto v = r.string(j, "group", path, false)) c.group = *v;
  if (auto v = r.string(j, "count", path, false)) c.count = *v;
  if (auto v = r.integer(j, "k", path, false)) c.k = *v;
  if (auto v = r.string(j, "k_axis", path, false)) c.k_axis = *v;
  if (auto v = r.string(j, "values", path, false)) c.values = *v;
  return c;
}

}  // namespace d2k::detail
