#pragma once
/// Internal to d2k_core: reading JSON task files field by field, with each problem recorded as a
/// diagnostic that names the file, line and field path.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostics.h"
#include "core/task.h"

namespace d2k::detail {

/// `base.key` (or `key` when base is empty).
std::string join_path(std::string_view base, std::string_view key);
/// `base[i]`.
std::string index_path(std::string_view base, std::size_t i);

/// Reads typed fields of JSON objects of one file (and line, for JSONL). A null Diagnostics
/// makes it silent: used when re-reading JSON that validation already reported on.
class FieldReader {
 public:
  FieldReader(Diagnostics* diag, std::string file, int line) : diag_(diag), file_(std::move(file)), line_(line) {}

  void error(const std::string& field, const std::string& msg) const;
  void warning(const std::string& field, const std::string& msg) const;
  const std::string& file() const { return file_; }
  int line() const { return line_; }

  /// True if `j` is an object; otherwise records "expected an object".
  bool object(const ordered_json& j, const std::string& field) const;
  /// The field `key` of object `obj` (at `path`), checked for type; a missing required field is
  /// an error, a missing optional one gives nullopt silently.
  std::optional<std::string> string(const ordered_json& obj, std::string_view key, const std::string& path,
                                    bool required) const;
  /// Integers; a float with an integral value (1e6) is accepted.
  std::optional<std::int64_t> integer(const ordered_json& obj, std::string_view key, const std::string& path,
                                      bool required) const;
  std::optional<double> number(const ordered_json& obj, std::string_view key, const std::string& path,
                               bool required) const;
  std::optional<bool> boolean(const ordered_json& obj, std::string_view key, const std::string& path,
                              bool required) const;
  /// Warns about keys of `obj` not in `known` (typos would otherwise be ignored silently).
  void known_keys(const ordered_json& obj, const std::string& path, std::initializer_list<std::string_view> known) const;

 private:
  Diagnostics* diag_;
  std::string file_;
  int line_;
};

/// Integral value of a JSON number (integer, or float with an integral value), else nullopt.
std::optional<std::int64_t> json_integer(const ordered_json& j);

/// Reads a whole file; records "file is missing" or "cannot read" and returns nullopt on failure.
std::optional<std::string> read_text(const std::filesystem::path& path, Diagnostics& diag);

/// Parses JSON text, recording syntax errors (with byte, line and column) and duplicate object
/// keys (which JSON parsers silently collapse). `jsonl_line` > 0: the text is that line of a
/// JSONL file and diagnostics carry it; otherwise a syntax error carries its own line.
std::optional<ordered_json> parse_json(const std::string& text, Diagnostics& diag, const std::string& file,
                                       int jsonl_line);

/// A generator object: `kind` (required unless `override_`), every other field into params.
GeneratorSpec parse_generator(const ordered_json& j, const FieldReader& r, const std::string& path, bool override_);
/// A compare object: `rule` (required unless `override_`) and its fields; raw keeps the object.
CompareSpec parse_compare(const ordered_json& j, const FieldReader& r, const std::string& path, bool override_);

}  // namespace d2k::detail
