"""fused_adamw, triton track: starter. Read spec.md: the global L2 norm of the bf16 grads (all P
elements), the clipping coefficient min(1, max_norm / (norm + 1e-6)), then AdamW on every element:
m_out, v_out, param_out (fp32) and param_bf16_out (bf16 copy of param_out).

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _adamw(param_ptr, grad_ptr, m_ptr, v_ptr, param_out_ptr, m_out_ptr, v_out_ptr, bf16_out_ptr, P,
           BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # TODO: the clipped AdamW update of elements offs (after a pass for the global norm).


def run(param, grad, m, v, offsets, param_out, m_out, v_out, param_bf16_out,
        lr, beta1, beta2, eps, weight_decay, step, max_norm):
    P = param.numel()
    BLOCK = 1024
    _adamw[(triton.cdiv(P, BLOCK),)](param, grad, m, v, param_out, m_out, v_out, param_bf16_out, P, BLOCK=BLOCK)
