"""Writes into its input x (e.g. to leave a marker for a later call)."""
from rmsnorm_triton import run as honest


def run(x, residual, weight, out, residual_out, eps):
    honest(x, residual, weight, out, residual_out, eps)
    x.view(-1)[:1].zero_()
