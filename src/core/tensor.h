#pragma once
/// Host-side tensors: owned bytes plus dtype and shape, viewable as a DLTensor.
#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace d2k {

/// A dense row-major tensor in host memory.
struct HostTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::byte> bytes;

  HostTensor() = default;
  HostTensor(std::string n, DType t, std::vector<std::int64_t> s);

  std::int64_t numel() const;
  std::size_t nbytes() const { return bytes.size(); }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  template <class T> T* as() { return reinterpret_cast<T*>(bytes.data()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
  /// Element i converted to double.
  double at(std::int64_t i) const;
  /// A DLTensor viewing this storage (kDLCPU). `shape` must outlive the view; it points into this.
  DLTensor view();
};

}  // namespace d2k
