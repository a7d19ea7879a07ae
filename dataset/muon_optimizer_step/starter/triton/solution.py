"""muon_optimizer_step, triton track: starter. Read spec.md: Nesterov momentum, five quintic
Newton-Schulz iterations (bf16 operands, fp32 accumulation), the update with decoupled weight
decay, for B matrices of M x N.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. Every product must run in Triton kernels (cuBLAS kernels are
REWARD_HACK(vendor_library) on this track). This skeleton launches a kernel that writes
nothing, so it fails correctness until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _momentum(m_ptr, g_ptr, m_out_ptr, n, beta, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # TODO: momentum_out = beta * momentum + grad; then the Newton-Schulz products and the update.


def run(param, grad, momentum, momentum_out, update, param_out, lr, momentum_beta, weight_decay, eps):
    n = param.numel()
    _momentum[(triton.cdiv(n, 1024),)](momentum, grad, momentum_out, n, momentum_beta, BLOCK=1024)
