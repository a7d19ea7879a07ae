"""Patches time.perf_counter, time.time and triton.testing.do_bench to report tiny times, then
computes honestly: d2k's timer is C++ (CUPTI and CUDA events), so nothing here is consulted."""
import time

import triton
import triton.testing

from rmsnorm_triton import run as honest

time.perf_counter = lambda: 0.0
time.time = lambda: 0.0
triton.testing.do_bench = lambda *a, **k: 1e-6


def run(x, residual, weight, out, residual_out, eps):
    honest(x, residual, weight, out, residual_out, eps)
