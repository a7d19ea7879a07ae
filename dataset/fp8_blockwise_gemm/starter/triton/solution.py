"""fp8_blockwise_gemm, triton track: starter. Read spec.md: c[m, n] = sum_k a[m, k] * b[n, k] *
a_scales[m, k // 128] * b_scales[n // 128, k // 128], a [M, K] and b [N, K] float8_e4m3fn (K
contiguous), fp32 scales per 1 x 128 block of a and per 128 x 128 block of b, sums in fp32, c
rounded once to bf16.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _fp8_blockwise_gemm(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, M, N, K,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # TODO: for each block of 128 along K, tl.dot the fp8 tiles into an fp32 partial, multiply it
    # by the row scales of a and the block scale of b, add to the accumulator, store c (bf16).


def run(a, b, a_scales, b_scales, c):
    M, K = a.shape
    N = b.shape[0]
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    _fp8_blockwise_gemm[grid](a, b, a_scales, b_scales, c, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=128)
