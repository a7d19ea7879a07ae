"""layernorm_backward, triton track: starter. Read spec.md: from dy and x (bf16 [T, H]), the saved
mean and rstd (fp32 [T]) and gamma (fp32 [H]), write dx (bf16 [T, H]) and the column sums dgamma
and dbeta (fp32 [H]).

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _layernorm_backward(dy_ptr, x_ptr, mean_ptr, rstd_ptr, gamma_ptr, dx_ptr, dgamma_ptr, dbeta_ptr, T, H,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    # TODO: the row sums of gamma * dy * xhat and gamma * dy, dx, and the column sums.


def run(dy, x, mean, rstd, gamma, dx, dgamma, dbeta):
    T, H = x.shape
    if T:
        _layernorm_backward[(T,)](dy, x, mean, rstd, gamma, dx, dgamma, dbeta, T, H, BLOCK=1024)
