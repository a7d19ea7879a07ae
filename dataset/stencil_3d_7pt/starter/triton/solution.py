"""stencil_3d_7pt, triton track: starter. Read spec.md: T Jacobi steps of the 7-point stencil on the
fp32 grid u[Z, Y, X]: interior cells become c0 * u + c1 * (sum of the six face neighbours), boundary
cells keep their input value; the result goes to out.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
(d2k poisons the outputs before every call) until you write it.
"""
import triton
import triton.language as tl


@triton.jit
def _jacobi_step(src_ptr, dst_ptr, Z, Y, X, c0, c1, BLOCK: tl.constexpr):
    zy = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    # TODO: the row (z, y) = divmod(zy, Y): boundary cells copied, interior cells from their seven
    # inputs; a second buffer for the steps in between.


def run(u, out, c0, c1, T):
    Z, Y, X = u.shape
    _jacobi_step[(Z * Y, triton.cdiv(X, 1024))](u, out, Z, Y, X, c0, c1, BLOCK=1024)
