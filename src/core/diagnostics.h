#pragma once
/// Errors and warnings found while loading and validating task files, each naming the file, the
/// line (JSONL files, and JSON syntax errors) and the field.
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <string_view>
#include <vector>

namespace d2k {

/// One finding. `format()` gives `file:line: field: message` (`:line` left out when line is 0,
/// `field: ` left out when empty; warnings carry `warning: ` before the message).
struct Diagnostic {
  enum class Severity { error, warning };
  Severity severity = Severity::error;
  std::string file;     ///< path as given to the loader, e.g. dataset/x/definition.json
  int line = 0;         ///< 1-based; 0 when the file is not line-oriented
  std::string field;    ///< dotted path, e.g. inputs.x.dtype, axes.T.min, compare.out.atol
  std::string message;
  std::string format() const;
};

/// Collects findings; loaders keep going after an error so that one run reports them all.
class Diagnostics {
 public:
  void error(std::string file, int line, std::string field, std::string message);
  void warning(std::string file, int line, std::string field, std::string message);

  /// True when no error was recorded (warnings do not count).
  bool ok() const { return errors_ == 0; }
  std::size_t error_count() const { return errors_; }
  std::size_t warning_count() const { return items_.size() - errors_; }
  const std::vector<Diagnostic>& items() const { return items_; }
  /// Every finding, one `format()` per line.
  std::string format() const;
  /// True when some finding's `format()` contains `text` (for tests and tools).
  bool contains(std::string_view text) const;
  /// True when an error was recorded for exactly this file, line and field.
  bool has_error(std::string_view file, int line, std::string_view field) const;
  /// True when any error was recorded for this file and line (any field).
  bool has_error_at(std::string_view file, int line) const;
  /// Appends another collection's findings.
  void merge(const Diagnostics& other);

 private:
  std::vector<Diagnostic> items_;
  std::size_t errors_ = 0;
  // (file, line, field) of every error: has_error runs once per workload line, so a scan of
  // items_ made validation quadratic in the number of lines.
  std::set<std::tuple<std::string, int, std::string>, std::less<>> error_keys_;
  std::set<std::tuple<std::string, int>, std::less<>> error_lines_;
};

}  // namespace d2k
