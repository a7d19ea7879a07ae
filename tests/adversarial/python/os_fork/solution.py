"""Forks a child that would keep working (or report) outside the timed window."""
import os

from rmsnorm_triton import run as honest


def run(x, residual, weight, out, residual_out, eps):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    honest(x, residual, weight, out, residual_out, eps)
