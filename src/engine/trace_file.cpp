#include "engine/trace_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/core.h>

namespace d2k {

TraceFileSink::TraceFileSink(std::string path, std::string what) : path_(std::move(path)), what_(std::move(what)) {
  open_for_append(true);
}

TraceFileSink::~TraceFileSink() {
  if (fd_ >= 0) ::close(fd_);
}

void TraceFileSink::open_for_append(bool truncate) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd_ < 0) throw std::runtime_error(fmt::format("{}: cannot write {}: {}", what_, path_, std::strerror(errno)));
}

void TraceFileSink::append(const Trace& t) {
  // One write of the whole line: a signal that ends the process leaves the line whole or absent
  // (a regular file's write is not cut by a signal short of a full disk; readers skip a torn one).
  const std::string line = to_json(t).dump() + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("{}: cannot write {}: {}", what_, path_, std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
}

void TraceFileSink::put_partial(const Trace& t) {
  append(t);
  partial_lines_.insert(key(t));
}

void TraceFileSink::put(const Trace& t) {
  final_.push_back(t);
  // A record whose partial line is on disk waits for commit(): appending it now would leave two
  // lines for one record.
  if (partial_lines_.count(key(t)) == 0) append(final_.back());
}

void TraceFileSink::commit() {
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) throw std::runtime_error(fmt::format("{}: cannot write {}", what_, tmp));
    for (const Trace& t : final_) f << to_json(t).dump() << "\n";
    f.flush();
    if (!f) throw std::runtime_error(fmt::format("{}: cannot write {}", what_, tmp));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path_, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot rename {} to {}: {}", what_, tmp, path_, ec.message()));
  partial_lines_.clear();
  open_for_append(false);  // the old descriptor names the file the rename replaced
}

}  // namespace d2k
