#pragma once
/// Portability macros for code shared between host C++ and CUDA device code.

#if defined(__CUDACC__)
#define D2K_HD __host__ __device__ __forceinline__
#else
#define D2K_HD inline
#endif

namespace d2k::data {
/// 128-bit unsigned integer (GCC/Clang/nvcc extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;
}  // namespace d2k::data
