"""fp8_blockwise_gemm as a PyTorch user writes it without a block-scaled fp8 kernel: dequantise
both e4m3 operands to bf16 with their block scales (1 x 128 for the activations, 128 x 128 for
the weight, the last row block partial when N % 128 != 0), then one bf16 matmul (cuBLAS, fp32
accumulation). Measured as the targets torch_eager and torch_compile."""
import torch


def run(a, b, a_scales, b_scales, c):
    M, K = a.shape
    N = b.shape[0]
    KB = K // 128
    a_deq = (a.float().view(M, KB, 128) * a_scales.unsqueeze(-1)).view(M, K).to(torch.bfloat16)
    sb = b_scales.repeat_interleave(128, dim=0)[:N]                   # [N, K/128]: each block row's scales
    b_deq = (b.float().view(N, KB, 128) * sb.unsqueeze(-1)).view(N, K).to(torch.bfloat16)
    torch.matmul(a_deq, b_deq.t(), out=c)
