"""softmax_cross_entropy as a PyTorch user writes it in a training step: F.cross_entropy on the
upcast logits with reduction='none', then backward of grad_scale * sum(loss) for dlogits (bf16).
Measured as the targets torch_eager and torch_compile (AOTAutograd compiles the backward)."""
import torch
import torch.nn.functional as F


def run(logits, targets, loss, dlogits, ignore_index, grad_scale):
    with torch.enable_grad():
        x = logits.detach().requires_grad_()
        per_token = F.cross_entropy(x.float(), targets, reduction="none", ignore_index=ignore_index)
        per_token.backward(torch.full_like(per_token, grad_scale))
    loss.copy_(per_token.detach())
    dlogits.copy_(x.grad)
