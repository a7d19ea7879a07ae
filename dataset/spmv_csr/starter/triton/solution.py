"""spmv_csr, triton track: starter. Read spec.md: y = A x for a square N x N CSR matrix (int32
row_ptr [N+1], int32 col_idx [NNZ], fp32 values [NNZ]), fp32 x [N] and y [N]; y[r] sums the row's
values[j] * x[col_idx[j]], 0 for an empty row.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _spmv(row_ptr_ptr, col_ptr, val_ptr, x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < N
    # TODO: for each row, sum values[j] * x[col_idx[j]] over [row_ptr[r], row_ptr[r+1]); store y.


def run(row_ptr, col_idx, values, x, y, N):
    _spmv[(triton.cdiv(N, 256),)](row_ptr, col_idx, values, x, y, N, BLOCK=256)
