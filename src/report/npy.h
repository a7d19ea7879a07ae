#pragma once
/// NumPy .npy files (format 1.0) for `d2k check --dump`: numpy.load and torch read them.
#include <filesystem>

#include "core/tensor.h"

namespace d2k {

/// Writes `t` to `path`. Types NumPy has are written as they are; bfloat16 and the fp8 types,
/// which it lacks, are widened to float32 (exactly: every such value is a float32 value).
/// Throws std::runtime_error naming the path when it cannot be written.
void write_npy(const std::filesystem::path& path, const HostTensor& t);

}  // namespace d2k
