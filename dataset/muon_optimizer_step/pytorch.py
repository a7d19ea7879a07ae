"""One Muon step as its reference optimizer writes it in PyTorch: Nesterov momentum, five
quintic Newton-Schulz iterations with bf16 matmuls (cuBLAS, fp32 accumulation), the update
with decoupled weight decay. Measured as the targets torch_eager and torch_compile."""
import torch

A_, B_, C_ = 3.4445, -4.7750, 2.0315


def newton_schulz5(g, eps):
    x = g.bfloat16()
    tall = x.size(-2) > x.size(-1)
    if tall:
        x = x.mT
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + eps)
    for _ in range(5):
        a = x @ x.mT
        b = B_ * a + C_ * a @ a
        x = A_ * x + b @ x
    return x.mT if tall else x


def run(param, grad, momentum, momentum_out, update, param_out, lr, momentum_beta, weight_decay, eps):
    m = momentum_beta * momentum + grad.float()
    momentum_out.copy_(m)
    u = grad.float() + momentum_beta * m
    M, N = param.shape[-2], param.shape[-1]
    update.copy_((max(1.0, M / N) ** 0.5 * newton_schulz5(u, eps).float()).bfloat16())
    param_out.copy_(param * (1 - lr * weight_decay) - lr * update.float())
