"""fused_add_rmsnorm, triton track: starter. Read spec.md: residual_out = bf16(x + residual) and
out = bf16(residual_out * rsqrt(mean(residual_out^2) + eps) * weight) for T rows of length H.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream (kernels launched here go on it). This skeleton launches a kernel that writes
nothing, so it fails correctness (d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _fused_add_rmsnorm(x_ptr, res_ptr, w_ptr, out_ptr, res_out_ptr, H, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < H
    # TODO: load a row of x and residual, write residual_out and out.


def run(x, residual, weight, out, residual_out, eps):
    T, H = x.shape
    if T == 0:
        return
    _fused_add_rmsnorm[(T,)](x, residual, weight, out, residual_out, H, eps, BLOCK=triton.next_power_of_2(min(H, 4096)))
