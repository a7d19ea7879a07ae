"""w4a16_gemv, triton track: starter. Read spec.md: y[b, n] = sum_k x[b, k] * (q[n, k] - 8) *
scales[n, k // 128], with the int4 codes q packed eight per int32 word of qweight (k = 8i + j in
bits 4j..4j+3 of word i), products and sums in fp32, y rounded once to bf16.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _w4a16_gemv(x_ptr, qw_ptr, scales_ptr, y_ptr, B, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # TODO: for each group of 128 along K, unpack the codes ((word >> 4j) & 15), multiply by x in
    # fp32, apply the group's scale, and store y (bf16) for the B rows of x.


def run(x, qweight, scales, y):
    B, K = x.shape
    N = qweight.shape[0]
    _w4a16_gemv[(triton.cdiv(N, 64),)](x, qweight, scales, y, B, N, K, BLOCK_N=64, BLOCK_K=128)
