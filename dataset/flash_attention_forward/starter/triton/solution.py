"""flash_attention_forward, triton track: starter. Read spec.md: causal grouped-query attention over
bf16 q [B, S, Hq, D], k and v [B, S, Hkv, D] (D = 128): o [B, S, Hq, D] (bf16) and the natural-log
log-sum-exp lse [B, Hq, S] (fp32) of each query's scaled scores over its keys 0..i.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, S, Hq, Hkv, scale,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    tile = tl.program_id(0)
    bh = tl.program_id(1)
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    # TODO: an online softmax over the causal key tiles of (batch, head) bh, then o and lse.


def run(q, k, v, o, lse, scale):
    B, S, Hq, D = q.shape
    Hkv = k.shape[2]
    grid = (triton.cdiv(S, 128), B * Hq)
    _attention_fwd[grid](q, k, v, o, lse, S, Hq, Hkv, scale, BLOCK_M=128, BLOCK_N=64, HEAD_DIM=D)
