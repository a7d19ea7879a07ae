"""moe_topk_router as a PyTorch user writes it (eager ops; d2k's torch_compile target wraps run in
torch.compile). Measured as the targets torch_eager and torch_compile.

The routing of Hugging Face's Qwen2/Qwen3-MoE and Mixtral blocks (softmax in fp32, top-k,
renormalise) followed by the dispatch bookkeeping of vLLM's and Megatron's token permutation
(bincount, cumsum, a stable argsort of the flattened expert ids). One change from those models:
the top-k is a stable descending sort of the logits instead of torch.topk, because torch.topk does
not define which of equal values it returns nor their order, and the task's tie rule (spec.md:
among equal logits the lower expert id first) must hold; selecting on the logits rather than on
the fp32 probabilities also keeps two logits whose fp32 probabilities round to the same value in
logit order. bincount reads its input's maximum on the host (a synchronisation), as it does in
those models, so this program cannot be captured in a CUDA graph."""
import torch


def run(logits, topk_weights, topk_ids, expert_counts, expert_offsets, permutation, E, K):
    probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
    _, order = torch.sort(logits, dim=-1, descending=True, stable=True)
    ids = order[:, :K]
    w = torch.gather(probs, -1, ids)
    topk_weights.copy_(w / w.sum(dim=-1, keepdim=True))
    topk_ids.copy_(ids)
    flat = ids.reshape(-1)
    counts = torch.bincount(flat, minlength=E)
    expert_counts.copy_(counts)
    expert_offsets[0] = 0
    expert_offsets[1:].copy_(torch.cumsum(counts, 0))
    permutation.copy_(torch.argsort(flat, stable=True))
