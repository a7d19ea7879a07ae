"""w4a16_gemv as a PyTorch user writes it: unpack the int4 codes with shifts and a mask, dequantise
to bf16 with the group scales, then one matmul (cuBLAS, fp32 accumulation). Measured as the
targets torch_eager and torch_compile."""
import torch


def run(x, qweight, scales, y):
    N, KP = qweight.shape
    K = KP * 8
    shifts = torch.arange(0, 32, 4, dtype=torch.int32, device=qweight.device)
    q = (qweight.unsqueeze(-1) >> shifts) & 15                      # [N, K/8, 8] int32 codes, k = 8i + j
    w = (q.reshape(N, K // 128, 128) - 8).to(torch.bfloat16) * scales.unsqueeze(-1)  # bf16 weight
    torch.matmul(x, w.reshape(N, K).t(), out=y)
