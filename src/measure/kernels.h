#pragma once
/// Device kernels of the measurement library behind plain host launchers, so that the host code
/// (JSON, formatting, cuBLASLt) compiles with the host compiler. Each launcher enqueues one kernel
/// and returns cudaGetLastError().
#include <cstddef>

#include <cuda_runtime_api.h>

namespace d2k::measure::detail {

/// Spins until *release != 0 (host-mapped memory) or timeout_ns passes; sets *timed_out then.
cudaError_t launch_blocking_spin(cudaStream_t s, const int* release, int* timed_out, unsigned long long timeout_ns);
/// The blocking kernel's function address (for cudaFuncGetName).
const void* blocking_spin_symbol();

enum class FillType { bf16, f16, e4m3, f32, u32 };
/// Fills n elements with uniform values in [-1, 1) (u32: random words) from an index hash.
cudaError_t launch_fill_uniform(FillType t, void* p, std::size_t n, unsigned seed, int grid, cudaStream_t s);
/// dst[i] = src[i] over n16 16-byte words, grid-stride.
cudaError_t launch_copy_vec16(void* dst, const void* src, std::size_t n16, int grid, cudaStream_t s);
/// Writes n16 16-byte words of a pattern derived from `salt`, grid-stride.
cudaError_t launch_write_vec16(void* dst, std::size_t n16, unsigned salt, int grid, cudaStream_t s);
/// Reads n16 16-byte words (XOR-reduced; *sink written only if the result equals sentinel).
cudaError_t launch_read_vec16(const void* src, std::size_t n16, unsigned* sink, unsigned sentinel, int grid,
                              cudaStream_t s);

/// The same read with kReadLoadsInFlight independent streaming loads per thread per step.
inline constexpr int kReadLoadsInFlight = 8;
cudaError_t launch_read_vec16_unrolled(const void* src, std::size_t n16, unsigned* sink, unsigned sentinel, int grid,
                                       cudaStream_t s);

/// A read with no loop: thread t of CTA b loads kReadOneshotLoads words, 256 apart, of the CTA's
/// 256 x kReadOneshotLoads-word block, all issued before the first is used; the grid covers n16
/// (one wave of 8 CTAs per SM for 32 MiB on 132 SMs). What a small read reaches when every byte is
/// requested at the kernel's start: the loops above still walk their grid stride at small sizes.
inline constexpr int kReadOneshotLoads = 8;
cudaError_t launch_read_vec16_oneshot(const void* src, std::size_t n16, unsigned* sink, unsigned sentinel,
                                      cudaStream_t s);

/// Independent multiply-add chains per thread in the FMA loops.
inline constexpr int kFmaChains = 16;
/// Register-resident loops of `iters` x kFmaChains multiply-adds per thread.
cudaError_t launch_fma_loop_f32(float* sink, float a, float b, int iters, int grid, int block, cudaStream_t s);
cudaError_t launch_fma_loop_f64(double* sink, double a, double b, int iters, int grid, int block, cudaStream_t s);
cudaError_t launch_fma_loop_u32(unsigned* sink, unsigned a, unsigned b, int iters, int grid, int block,
                                cudaStream_t s);

}  // namespace d2k::measure::detail
