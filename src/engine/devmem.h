#pragma once
/// Device memory a worker process can share: the parent allocates every buffer a candidate sees
/// with the CUDA virtual-memory API and hands the worker a POSIX file descriptor per buffer
/// (sent over the worker's UNIX socket), which the worker maps into its own context. Unlike
/// legacy CUDA IPC handles, descriptors work across PID namespaces, and the parent keeps the
/// only allocation: the worker cannot free it, and nothing it allocates itself can alias it.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace d2k {

/// How a DevMem is backed.
enum class MemKind {
  local,      ///< cudaMalloc in this process
  shareable,  ///< cuMemCreate with a POSIX descriptor handle, mapped here, exportable
};

/// One device allocation (RAII). Move-only.
class DevMem {
 public:
  DevMem();
  /// Allocates `bytes` (at least 1) of the given kind on the current device.
  DevMem(std::size_t bytes, MemKind kind);
  /// Maps memory exported by another process: takes ownership of `fd` (closed once imported).
  static DevMem import_fd(int fd, std::size_t bytes);
  ~DevMem();
  DevMem(DevMem&&) noexcept;
  DevMem& operator=(DevMem&&) noexcept;
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;

  void* get() const;
  std::size_t size() const;
  /// A number no other allocation of this process has had (addresses are reused, this is not).
  std::uint64_t id() const;
  /// A new descriptor for this allocation (the caller owns and closes it). Only for shareable.
  int export_fd() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace d2k
