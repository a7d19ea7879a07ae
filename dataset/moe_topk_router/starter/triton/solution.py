"""moe_topk_router, triton track: starter. Read spec.md: for each of T tokens of E fp32 router
logits, the K experts with the largest logits (ties: the lower id first), their renormalised
softmax weights, the tokens per expert (expert_counts), its exclusive prefix sum (expert_offsets,
E + 1 entries) and the flat (token * K + slot) indices grouped by expert, ascending inside each
expert (permutation).

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _route(logits_ptr, weights_ptr, ids_ptr, E, K, BLOCK_E: tl.constexpr):
    token = tl.program_id(0)
    experts = tl.arange(0, BLOCK_E)
    # TODO: the K largest logits of this token, their weights; then counts, offsets, permutation.


def run(logits, topk_weights, topk_ids, expert_counts, expert_offsets, permutation, T, E, K):
    _route[(T,)](logits, topk_weights, topk_ids, E, K, BLOCK_E=triton.next_power_of_2(E))
