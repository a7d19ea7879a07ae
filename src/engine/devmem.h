#pragma once
/// Device memory a worker process can share: the parent allocates every buffer a candidate sees
/// with the CUDA virtual-memory API and hands the worker a POSIX file descriptor per buffer
/// (sent over the worker's UNIX socket), which the worker maps into its own context. Unlike
/// legacy CUDA IPC handles, descriptors work across PID namespaces, and the parent keeps the
/// only allocation: the worker cannot free it, and nothing it allocates itself can alias it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>

namespace d2k {

/// The byte written over every buffer's slack (DevMem::fill_slack) by DeviceSet::allocate.
inline constexpr std::uint8_t kSlackCanary = 0x5C;

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
  /// Shareable memory is mapped in whole granules (2 MiB on the H200): `slack` bytes lie between
  /// the buffer's end and its mapping's end, and `guard` bytes of reserved, unmapped address
  /// space follow the mapping in this process (an access there faults). 0 for local memory.
  std::size_t slack() const;
  std::size_t guard() const;
  /// Writes `canary` over the slack (on `s`; the caller synchronises), so that a write past the
  /// buffer's end that stays inside the mapping shows, and a read there sees no other buffer.
  void fill_slack(std::uint8_t canary, cudaStream_t s) const;
  /// The slack's bytes now (synchronises `s`).
  std::vector<std::uint8_t> read_slack(cudaStream_t s) const;
  /// A number no other allocation of this process has had (addresses are reused, this is not).
  std::uint64_t id() const;
  /// Whether the allocation numbered `id` still exists in this process. A worker's mapping of a
  /// buffer the parent has freed keeps its memory allocated until the worker unmaps it
  /// (TargetRunner::release_freed asks it to).
  static bool alive(std::uint64_t id);
  /// A new descriptor for this allocation (the caller owns and closes it). Only for shareable.
  int export_fd() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace d2k
