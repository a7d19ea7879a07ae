#include "core/diagnostics.h"

namespace d2k {

std::string Diagnostic::format() const {
  std::string s = file;
  if (line > 0) {
    s += ':';
    s += std::to_string(line);
  }
  s += ": ";
  if (!field.empty()) s += field + ": ";
  if (severity == Severity::warning) s += "warning: ";
  return s + message;
}

void Diagnostics::error(std::string file, int line, std::string field, std::string message) {
  error_keys_.emplace(file, line, field);
  error_lines_.emplace(file, line);
  items_.push_back({Diagnostic::Severity::error, std::move(file), line, std::move(field), std::move(message)});
  ++errors_;
}

void Diagnostics::warning(std::string file, int line, std::string field, std::string message) {
  items_.push_back({Diagnostic::Severity::warning, std::move(file), line, std::move(field), std::move(message)});
}

std::string Diagnostics::format() const {
  std::string s;
  for (const auto& d : items_) s += d.format() + "\n";
  return s;
}

bool Diagnostics::contains(std::string_view text) const {
  for (const auto& d : items_)
    if (d.format().find(text) != std::string::npos) return true;
  return false;
}

bool Diagnostics::has_error(std::string_view file, int line, std::string_view field) const {
  return error_keys_.find(std::make_tuple(file, line, field)) != error_keys_.end();
}

bool Diagnostics::has_error_at(std::string_view file, int line) const {
  return error_lines_.find(std::make_tuple(file, line)) != error_lines_.end();
}

void Diagnostics::merge(const Diagnostics& other) {
  for (const auto& d : other.items_) {
    items_.push_back(d);
    if (d.severity == Diagnostic::Severity::error) {
      ++errors_;
      error_keys_.emplace(d.file, d.line, d.field);
      error_lines_.emplace(d.file, d.line);
    }
  }
}

}  // namespace d2k
