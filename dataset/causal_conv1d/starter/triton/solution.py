"""causal_conv1d, triton track: starter. Read spec.md: for x [B, D, L] (bf16), weight [D, W] and
bias [D] (fp32), out[b, d, l] = silu(bias[d] + sum_k weight[d, k] * x[b, d, l - (W-1) + k]) in bf16,
with zeros before the start of each row.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _causal_conv1d_silu(x_ptr, w_ptr, b_ptr, out_ptr, D, L, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    # TODO: the W taps of channel row % D, the shifted loads of x (zeros before the row's start),
    # bias, SiLU, the store of the bf16 outputs.


def run(x, weight, bias, out):
    B, D, L = x.shape
    if B * D and L:
        _causal_conv1d_silu[(B * D, triton.cdiv(L, 1024))](x, weight, bias, out, D, L, BLOCK=1024)
