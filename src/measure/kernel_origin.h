#pragma once
/// Names of device activities: demangling and attribution to the library that owns a kernel.
#include <string>
#include <string_view>

namespace d2k::measure {

/// Demangles a C++ symbol (Itanium ABI); returns the input unchanged when it is not mangled.
std::string demangle(std::string_view mangled);

/// Which code a kernel (by its demangled name) most likely comes from:
/// "cublas" (cuBLAS/cuBLASLt: nvjet_*, sm90_xmma_gemm*, cutlass_80_*/cutlass3x_* instances, gemv*,
/// splitKreduce*), "cudnn" (cudnn*, xmma fprop/dgrad/wgrad), "cutlass" (CUTLASS/CuTe templates
/// compiled into the caller: cutlass::/cute::), "cub" (cub::/thrust::), "torch" (at::/c10::),
/// "memcpy"/"memset" for copy-engine activities, and "own" for everything else.
/// Attribution by name is a heuristic: it labels, the caller decides what a label means.
std::string_view kernel_origin(std::string_view demangled_name);

}  // namespace d2k::measure
