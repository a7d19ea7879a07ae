"""softmax_cross_entropy, triton track: starter. Read spec.md: per row of logits (T x V, bf16),
loss = logsumexp(row) - row[target] and dlogits = grad_scale * (softmax(row) - onehot(target)),
with rows whose target is ignore_index giving loss 0 and zero gradients.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _cross_entropy(logits_ptr, targets_ptr, loss_ptr, dlogits_ptr, V, ignore_index, grad_scale,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    # TODO: an online max/sum over the row's V logits, then the loss and the gradient row.


def run(logits, targets, loss, dlogits, ignore_index, grad_scale):
    T, V = logits.shape
    if T:
        _cross_entropy[(T,)](logits, targets, loss, dlogits, V, ignore_index, grad_scale, BLOCK=1024)
