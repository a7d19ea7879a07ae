#pragma once
/// The --json file of check, bench and suite, true at every moment of the run: each record is
/// appended the moment it is known (a partial one marked `"partial": true`), one whole line per
/// write(2), so a run cut by a deadline, SIGTERM or Ctrl-C leaves every finished record on disk
/// (at worst a torn last line, which readers skip). commit() rewrites the file atomically
/// (FILE.tmp, then rename) with the final records in the order they came, replacing the partial
/// lines: after a run that ended, the file is exactly the final traces. docs/report.md, "Trace
/// files".
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/request.h"

namespace d2k {

class TraceFileSink final : public TraceSink {
 public:
  /// Creates or empties `path`; throws std::runtime_error naming `what` (the option) and the file.
  TraceFileSink(std::string path, std::string what = "--json");
  ~TraceFileSink() override;
  TraceFileSink(const TraceFileSink&) = delete;
  TraceFileSink& operator=(const TraceFileSink&) = delete;

  void put(const Trace& t) override;
  void put_partial(const Trace& t) override;
  /// The file becomes the final records so far (partial lines replaced); appending goes on after.
  void commit();
  /// The final records, in the order put() gave them.
  const std::vector<Trace>& traces() const { return final_; }

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string>;  // task, target, uuid, role
  static Key key(const Trace& t) { return {t.task, t.target, t.workload_uuid, t.role}; }
  void open_for_append(bool truncate);
  void append(const Trace& t);

  std::string path_, what_;
  int fd_ = -1;
  std::vector<Trace> final_;
  std::set<Key> partial_lines_;  ///< partial lines on disk that commit() has not replaced yet
};

}  // namespace d2k
