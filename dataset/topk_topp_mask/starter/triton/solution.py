"""topk_topp_mask, triton track: starter. Read spec.md: per row of logits (B x V, fp32), keep the
tokens in the top-k set and the top-p set (ties by value: tau is a logit, the kept set is
logits >= tau), write their renormalised probabilities of softmax(logits / temperature), 0 elsewhere.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _topk_topp(logits_ptr, probs_ptr, V, k, top_p, temperature, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    # TODO: the row's maximum and softmax sum, the k-th largest logit, the top-p threshold, then
    # the kept probabilities.


def run(logits, probs, k, top_p, temperature):
    B, V = logits.shape
    if B:
        _topk_topp[(B,)](logits, probs, V, k, top_p, temperature, BLOCK=1024)
