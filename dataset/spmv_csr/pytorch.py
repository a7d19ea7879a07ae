"""spmv_csr as a PyTorch user writes it: a CSR tensor times a dense vector. torch.sparse_csr_tensor
takes the int32 row pointer and columns as they are (both index tensors must share one dtype, and
int32 is accepted), values in fp32; `A @ x` dispatches to cuSPARSE's SpMV (cusparseSpMV with its
default algorithm) on CUDA. Many users hold int64 indices (PyTorch's default index dtype, e.g.
from `.to_sparse_csr()`): that path reads 8-byte columns, and its cast is what TASKS.md's
"int64 idx" row measured; here the indices stay int32, the ABI's dtype, so the comparison with
the library target is like for like. The result is copied into the preallocated y. Measured as
the targets torch_eager and torch_compile (torch.compile does not fuse sparse ops: it calls the
same kernel)."""
import torch


def run(row_ptr, col_idx, values, x, y, N):
    a = torch.sparse_csr_tensor(row_ptr, col_idx, values, size=(N, N), check_invariants=False)
    y.copy_(a @ x)
