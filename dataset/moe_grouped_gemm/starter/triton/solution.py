"""moe_grouped_gemm, triton track: starter. Read spec.md: for each expert e, the rows
[offsets[e], offsets[e+1]) of x (bf16, [T, K]) times w[e] transposed (w: bf16 [E, N, K]) give
those rows of y (bf16, [T, N]), accumulated in fp32.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _grouped_gemm(x_ptr, w_ptr, offsets_ptr, y_ptr, E, K, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tile = tl.program_id(0)
    # TODO: map tile to (expert, m-tile, n-tile) from the offsets, then a K loop of tl.dot in fp32.


def run(x, w, offsets, y):
    E = w.shape[0]
    _grouped_gemm[(E,)](x, w, offsets, y, E, x.shape[1], w.shape[1], BLOCK_M=128, BLOCK_N=128)
