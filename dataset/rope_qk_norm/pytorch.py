"""rope_qk_norm as a PyTorch user writes it (eager ops; d2k's torch_compile target wraps run in
torch.compile). Measured as the targets torch_eager and torch_compile.

Qwen3's attention prologue in fp32 arithmetic, as the task states it: split the packed qkv, RMSNorm
each q and k head vector with its gain, neox rotary embedding with the fp32 cos/sin cache row of
each token's position, one rounding to bf16; v copied."""
import torch
import torch.nn.functional as F


def run(qkv, q_norm_weight, k_norm_weight, positions, cos_sin_cache, q, k, v, eps):
    T, Hq, D = q.shape
    Hkv = k.shape[1]
    qs, ks, vs = qkv.split([Hq * D, Hkv * D, Hkv * D], dim=-1)
    cos, sin = cos_sin_cache.index_select(0, positions).unsqueeze(1).chunk(2, dim=-1)  # [T, 1, D/2]

    def norm_rope(x, w, H):
        n = F.rms_norm(x.view(T, H, D).float(), (D,), w.float(), eps)
        x1, x2 = n.chunk(2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    q.copy_(norm_rope(qs, q_norm_weight, Hq))
    k.copy_(norm_rope(ks, k_norm_weight, Hkv))
    v.copy_(vs.view(T, Hkv, D))
