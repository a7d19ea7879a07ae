"""gemm_bias_gelu as a PyTorch user writes it: a biased linear layer followed by the tanh GELU
(the MLP up-projection of GPT-2 / GPT-NeoX / Gemma). B is torch.addmm's mat2, [K, N].
Measured as the targets torch_eager (addmm, then a gelu kernel) and torch_compile."""
import torch
import torch.nn.functional as F


def run(A, B, bias, out):
    out.copy_(F.gelu(torch.addmm(bias, A, B), approximate="tanh"))
