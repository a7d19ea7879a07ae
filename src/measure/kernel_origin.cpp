#include "measure/kernel_origin.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <memory>

namespace d2k::measure {

std::string demangle(std::string_view mangled) {
  const std::string s(mangled);
  if (s.rfind("_Z", 0) != 0) return s;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return (status == 0 && out) ? std::string(out.get()) : s;
}

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// Drops a leading return type ("void ") and leading template/namespace noise so that prefixes
// can be tested on the function's own qualified name.
std::string_view function_name(std::string_view n) {
  if (starts_with(n, "void ")) n.remove_prefix(5);
  return n;
}

// "sm90_xmma_...", "sm80_xmma_..."
bool is_sm_xmma(std::string_view n) {
  if (!starts_with(n, "sm")) return false;
  std::size_t i = 2;
  while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) ++i;
  return i > 2 && starts_with(n.substr(i), "_xmma_");
}

// cuBLAS ships CUTLASS-generated kernels under C-style names such as "cutlass_80_tensorop_..."
// and "cutlass3x_sm90_...", unlike header-CUTLASS instantiations, which are "cutlass::...".
bool is_cublas_cutlass(std::string_view n) {
  return starts_with(n, "cutlass3x_") ||
         (starts_with(n, "cutlass_") && n.size() > 8 && std::isdigit(static_cast<unsigned char>(n[8])));
}

}  // namespace

std::string_view kernel_origin(std::string_view demangled_name) {
  const std::string_view n = function_name(demangled_name);
  if (starts_with(n, "[memcpy")) return "memcpy";
  if (starts_with(n, "[memset")) return "memset";
  if (starts_with(n, "cudnn")) return "cudnn";
  if (is_sm_xmma(n)) {
    // Convolution kernels (fprop/dgrad/wgrad) are cuDNN's; GEMMs are cuBLAS's.
    if (contains(n, "fprop") || contains(n, "dgrad") || contains(n, "wgrad")) return "cudnn";
    return "cublas";
  }
  if (starts_with(n, "nvjet_") || starts_with(n, "cublas") ||
      starts_with(n, "gemv") || starts_with(n, "gemmk1_") || starts_with(n, "gemmSN_") ||
      starts_with(n, "splitKreduce_") || starts_with(n, "ampere_") || starts_with(n, "volta_") ||
      starts_with(n, "turing_") || starts_with(n, "hopper_") || starts_with(n, "xmma_") ||
      is_cublas_cutlass(n))
    return "cublas";
  // Only the function's own qualified name counts: an own kernel that takes CUTLASS or CUB types
  // as template arguments ("my_kernel<cutlass::half_t>") stays "own".
  if (starts_with(n, "at::") || starts_with(n, "c10::")) return "torch";
  if (starts_with(n, "cutlass::") || starts_with(n, "cute::")) return "cutlass";
  if (starts_with(n, "cub::") || starts_with(n, "thrust::")) return "cub";
  return "own";
}

}  // namespace d2k::measure
