"""topk_topp_mask as a PyTorch user writes it (eager ops; d2k's torch_compile target wraps run in
torch.compile). Measured as the targets torch_eager and torch_compile.

The sort-based filter of LLM samplers, with the task's tie rule: ties are kept or dropped together
(tau is a logit value, the kept set is logits >= tau). The probabilities are float64 because the
top-p decision must agree with exact arithmetic (spec.md): float32 cumulative sums misjudge rows
whose mass lands within their rounding error of top_p."""
import torch


def run(logits, probs, k, top_p, temperature):
    V = logits.shape[-1]
    p64 = torch.softmax(logits.double() / temperature, dim=-1)
    sorted_x, idx = torch.sort(logits, dim=-1, descending=True)
    sorted_p = torch.gather(p64, -1, idx)
    above = torch.cumsum(sorted_p, dim=-1) - sorted_p      # mass before each token, sorted order
    kk = min(int(k), V)
    tau = sorted_x[:, kk - 1:kk]                            # the k-th largest logit
    if top_p < 1.0:
        n_p = (above < top_p).sum(dim=-1, keepdim=True)     # a prefix: above only grows
        tau = torch.maximum(tau, torch.gather(sorted_x, -1, n_p - 1))
    kept = torch.where(logits >= tau, p64, 0.0)
    probs.copy_(kept / kept.sum(dim=-1, keepdim=True))
