"""rope_qk_norm, triton track: starter. Read spec.md: split the packed qkv (bf16 [T, (Hq + 2 Hkv) * D],
D = 128) into heads; RMSNorm each q and k head vector with its gain (q_norm_weight, k_norm_weight),
then rotate it with neox RoPE using cos_sin_cache[positions[t]] (first D/2 values cos, then sin);
write q, k ([T, heads, D], bf16) and copy v.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _rope_qk_norm(qkv_ptr, qw_ptr, kw_ptr, pos_ptr, cache_ptr, q_ptr, k_ptr, v_ptr, Hq, Hkv, eps,
                  D: tl.constexpr):
    token = tl.program_id(0)
    head = tl.program_id(1)
    cols = tl.arange(0, D)
    # TODO: load the head vector, normalise, rotate with the token's cache row, store to q, k or v.


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, q, k, v, eps):
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    if T:
        _rope_qk_norm[(T, Hq + 2 * Hkv)](qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, q, k, v,
                                        Hq, Hkv, eps, D=D)
