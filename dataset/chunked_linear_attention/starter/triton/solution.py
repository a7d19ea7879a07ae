"""chunked_linear_attention, triton track: starter. Read spec.md: causal linear attention with a
per-step log-decay. bf16 q, k, v [B, S, H, D] (D = 64 or 128) and fp32 a [B, H, S] (a <= 0); per
(b, h), with S_0 = 0: S_t = exp(a_t) S_{t-1} + k_t^T v_t and o_t = q_t S_t. Write o [B, S, H, D]
(bf16) and final_state [B, H, D, D] (fp32, [key dim][value dim]).

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _chunked_linear_attention(q_ptr, k_ptr, v_ptr, a_ptr, o_ptr, state_ptr, S, H,
                              CHUNK: tl.constexpr, HEAD_DIM: tl.constexpr):
    bh = tl.program_id(0)
    steps = tl.arange(0, CHUNK)
    # TODO: walk the chunks of (batch, head) bh, o for each chunk, then the final state.


def run(q, k, v, a, o, final_state):
    B, S, H, D = q.shape
    _chunked_linear_attention[(B * H,)](q, k, v, a, o, final_state, S, H, CHUNK=64, HEAD_DIM=D)
