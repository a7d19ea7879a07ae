"""adam_8bit_blockwise as a PyTorch user writes bitsandbytes' blockwise 8-bit Adam step without
bitsandbytes (it is not installed on the GPU machine): the states are dequantised into fp32
tensors, the Adam update runs as tensor ops, each block's new absmax is a reduction over a
[blocks, 256] view, and each state is requantised to its nearest map entry with
torch.searchsorted (the map's midpoints as boundaries). The code maps are built once per device
from create_dynamic_map's definition. Measured as the targets torch_eager and torch_compile."""
import math

import torch

_maps = {}


def _dynamic_map(signed):
    """bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7, total_bits=8), in double."""
    data = []
    for i in range(7):
        f = 2 ** i if signed else 2 ** (i + 1)
        b = [0.1 + 0.9 * k / f for k in range(f + 1)]
        means = [(b[k] + b[k + 1]) / 2 for k in range(f)]
        data += [10.0 ** (i - 6) * x for x in means]
        if signed:
            data += [-(10.0 ** (i - 6)) * x for x in means]
    data += [0.0, 1.0]
    return sorted(data)


# Outside torch.compile's graph: read inside it, the cache's contents become a guard, so the
# first call's graph (cache empty) recompiled at the first timed call (cache filled), after the
# worker's lockdown had closed Inductor's cache folder (H200, 2026-12-03).
@torch.compiler.disable
def _code_maps(device):
    hit = _maps.get(device)
    if hit is None:
        hit = []
        for signed in (True, False):
            code = torch.tensor(_dynamic_map(signed), dtype=torch.float64).float().to(device)
            mids = (code[:-1] + code[1:]) * 0.5  # entry k wins on [mids[k-1], mids[k])
            hit.append((code, mids))
        _maps[device] = hit
    return hit


def _blocks(x, nb):
    """x as [nb, 256], the last block padded with zeros (they change no absmax)."""
    pad = nb * 256 - x.numel()
    return torch.nn.functional.pad(x, (0, pad)).view(nb, 256)


def _requantise(x, absmax, code, mids, zero_code, nb):
    n = x.numel()
    scale = torch.where(absmax > 0, absmax, torch.ones_like(absmax))
    xn = (_blocks(x, nb) / scale[:, None]).reshape(-1)[:n]
    q = torch.searchsorted(mids, xn, right=True)
    q = torch.where(absmax.repeat_interleave(256)[:n] > 0, q, torch.full_like(q, zero_code))
    return q.to(torch.uint8)


def run(param, grad, m_q, v_q, m_absmax, v_absmax, param_out, m_q_out, v_q_out, m_absmax_out, v_absmax_out,
        lr, beta1, beta2, eps, weight_decay, step):
    (cm, mid_m), (cv, mid_v) = _code_maps(param.device)
    n, nb = param.numel(), m_absmax.numel()
    m = cm[m_q.long()] * m_absmax.repeat_interleave(256)[:n]
    v = cv[v_q.long()] * v_absmax.repeat_interleave(256)[:n]
    m = m * beta1 + (1 - beta1) * grad
    v = v * beta2 + (1 - beta2) * grad * grad
    bc2 = math.sqrt(1 - beta2 ** step)
    step_size = -lr * bc2 / (1 - beta1 ** step)
    p = param + step_size * (m / (v.sqrt() + bc2 * eps))
    param_out.copy_(p * (1 - lr * weight_decay))
    m_absmax_out.copy_(_blocks(m.abs(), nb).amax(dim=1))
    v_absmax_out.copy_(_blocks(v, nb).amax(dim=1))
    m_q_out.copy_(_requantise(m, m_absmax_out, cm, mid_m, 127, nb))
    v_q_out.copy_(_requantise(v, v_absmax_out, cv, mid_v, 0, nb))
