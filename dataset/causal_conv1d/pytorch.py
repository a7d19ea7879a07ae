"""causal_conv1d as a PyTorch user writes it: the causal-conv1d package's reference program
(causal_conv1d_ref) with fp32 weights, a depthwise F.conv1d with W-1 zeros of left padding, the
tail cut, SiLU, one cast back to bf16. Measured as the targets torch_eager and torch_compile."""
import torch
import torch.nn.functional as F

# The task states fp32 arithmetic; PyTorch's default lets cuDNN run fp32 convolutions in TF32 (10-bit
# mantissa products), which the task's rule rejects. The program asks for fp32 convolutions.
torch.backends.cudnn.allow_tf32 = False


def run(x, weight, bias, out):
    L = x.shape[-1]
    D, W = weight.shape
    y = F.conv1d(x.to(weight.dtype), weight.unsqueeze(1), bias, padding=W - 1, groups=D)[..., :L]
    out.copy_(F.silu(y).to(out.dtype))
