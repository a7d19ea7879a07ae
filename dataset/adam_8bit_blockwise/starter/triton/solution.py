"""adam_8bit_blockwise, triton track: starter. Read spec.md: one Adam step with 8-bit blockwise
states (bitsandbytes' format: uint8 indices into a 256-entry dynamic code map, one fp32 absmax per
block of 256): dequantise, update param, m and v in fp32, take each block's new absmax, requantise
to the nearest map entry; write param_out, m_q_out, v_q_out, m_absmax_out and v_absmax_out.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _adam8(param_ptr, grad_ptr, mq_ptr, vq_ptr, ma_ptr, va_ptr, p_out_ptr, mq_out_ptr, vq_out_ptr,
           ma_out_ptr, va_out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # TODO: one quantisation block of 256 per program: dequantise, update, absmax, requantise.


def run(param, grad, m_q, v_q, m_absmax, v_absmax, param_out, m_q_out, v_q_out, m_absmax_out, v_absmax_out,
        lr, beta1, beta2, eps, weight_decay, step):
    N = param.numel()
    BLOCK = 256
    _adam8[(triton.cdiv(N, BLOCK),)](param, grad, m_q, v_q, m_absmax, v_absmax, param_out, m_q_out, v_q_out,
                                     m_absmax_out, v_absmax_out, N, BLOCK=BLOCK)
