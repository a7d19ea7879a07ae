#include "core/tensor.h"

#include <stdexcept>

#include <fmt/format.h>

namespace d2k {

namespace {
std::int64_t count_elements(const std::string& name, const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      throw std::invalid_argument(fmt::format("tensor '{}': dimension {} is negative ({})", name, d, shape[d]));
    if (shape[d] != 0 && n > INT64_MAX / shape[d])
      throw std::invalid_argument(fmt::format("tensor '{}': element count overflows int64", name));
    n *= shape[d];
  }
  return n;
}
}  // namespace

HostTensor::HostTensor(std::string n, DType t, std::vector<std::int64_t> s)
    : name(std::move(n)), dtype(t), shape(std::move(s)) {
  // Value-initialised storage: a fresh tensor reads as zeros until a generator fills it.
  bytes.resize(static_cast<std::size_t>(count_elements(name, shape)) * dtype_size(dtype));
}

std::int64_t HostTensor::numel() const { return count_elements(name, shape); }

double HostTensor::at(std::int64_t i) const {
  const std::size_t esz = dtype_size(dtype);
  if (i < 0 || static_cast<std::size_t>(i) >= bytes.size() / esz)
    throw std::out_of_range(fmt::format("tensor '{}': element {} out of range ({} elements)", name, i,
                                        bytes.size() / esz));
  return load_as_double(dtype, bytes.data() + static_cast<std::size_t>(i) * esz);
}

DLTensor HostTensor::view() {
  DLTensor t{};
  t.data = bytes.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<std::int32_t>(shape.size());
  t.dtype = to_dlpack(dtype);
  t.shape = shape.data();
  t.strides = nullptr;  // compact row-major
  t.byte_offset = 0;
  return t;
}

}  // namespace d2k
