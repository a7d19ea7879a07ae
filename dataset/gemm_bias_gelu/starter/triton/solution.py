"""gemm_bias_gelu, triton track: starter. Read spec.md: out[M, N] = gelu_tanh(A[M, K] @ B[K, N] +
bias[N]), all row-major bf16, fp32 accumulation.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _gemm_bias_gelu(a_ptr, b_ptr, bias_ptr, out_ptr, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    # TODO: accumulate the (BLOCK_M, BLOCK_N) tile over K with tl.dot in fp32, add the bias,
    # apply the tanh GELU and store bf16.


def run(A, B, bias, out):
    M, K = A.shape
    N = B.shape[1]
    grid = (triton.cdiv(M, 128), triton.cdiv(N, 128))
    _gemm_bias_gelu[grid](A, B, bias, out, M, N, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
