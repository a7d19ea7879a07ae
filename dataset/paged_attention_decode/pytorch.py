"""paged_attention_decode as a PyTorch user writes it without a paged-attention kernel: gather the
pages of every sequence through the block table (index_select over the whole table), then
F.scaled_dot_product_attention with GQA and a length mask. Measured as the targets torch_eager and
torch_compile."""
import torch
import torch.nn.functional as F


def run(q, k_cache, v_cache, block_table, seq_lens, o, scale, PAGE):
    B, P = block_table.shape
    _, _, Hkv, D = k_cache.shape
    S = P * PAGE
    idx = block_table.reshape(-1).long()
    # [B * P, PAGE, Hkv, D] -> [B, Hkv, S, D]: the whole table, as a contiguous copy
    k = k_cache.index_select(0, idx).reshape(B, S, Hkv, D).transpose(1, 2)
    v = v_cache.index_select(0, idx).reshape(B, S, Hkv, D).transpose(1, 2)
    mask = torch.arange(S, device=q.device)[None, :] < seq_lens[:, None]  # [B, S], True = attend
    out = F.scaled_dot_product_attention(q.unsqueeze(2), k, v, attn_mask=mask[:, None, None, :],
                                         scale=scale, enable_gqa=True)
    o.copy_(out.squeeze(2))
