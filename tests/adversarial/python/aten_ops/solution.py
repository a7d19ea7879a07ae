"""Computes with torch eager ops (ATen kernels) instead of Triton kernels."""
import torch


def run(x, residual, weight, out, residual_out, eps):
    r = x + residual
    residual_out.copy_(r)
    rf = r.float()
    out.copy_((rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(out.dtype))
