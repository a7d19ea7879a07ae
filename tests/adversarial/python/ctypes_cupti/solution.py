"""Reaches libcupti through ctypes and flushes/disables its activity records, hoping to blind
the kernel audit, then computes honestly."""
import ctypes

from rmsnorm_triton import run as honest


def run(x, residual, weight, out, residual_out, eps):
    try:
        cupti = ctypes.CDLL("libcupti.so", mode=ctypes.RTLD_GLOBAL)
        for kind in range(1, 60):
            cupti.cuptiActivityDisable(kind)
    except OSError:
        pass
    honest(x, residual, weight, out, residual_out, eps)
