"""paged_attention_decode, triton track: starter. Read spec.md: for each sequence b and query
head h (KV head h // 4), o[b, h] = softmax(scale * q[b, h] . K^T) V over the sequence's first
seq_lens[b] tokens, token t found at k_cache[block_table[b, t // PAGE], t % PAGE, h // 4].

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _paged_decode(q_ptr, k_ptr, v_ptr, block_table_ptr, seq_lens_ptr, o_ptr, scale, P,
                  PAGE: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    # TODO: an online softmax over the sequence's tokens, page by page through the block table.


def run(q, k_cache, v_cache, block_table, seq_lens, o, scale, PAGE):
    B, Hq, D = q.shape
    P = block_table.shape[1]
    Hkv = k_cache.shape[2]
    _paged_decode[(B, Hq)](q, k_cache, v_cache, block_table, seq_lens, o, scale, P,
                           PAGE=PAGE, HKV=Hkv, D=D)
