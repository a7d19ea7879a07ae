"""stream_compaction, triton track: starter. Read spec.md: the rows whose l_shipdate is below
date_lt keep their three columns, in input order, in the first `count` rows of the outputs; count
holds their number.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
until you write it (a per-block count, an exclusive scan of the counts, then the writes).
"""
import triton
import triton.language as tl


@triton.jit
def _compact(shipdate_ptr, N, date_lt, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    # TODO: keep = l_shipdate < date_lt; each kept row's output position; the writes; the count.


def run(l_shipdate, l_extendedprice, l_partkey, out_shipdate, out_extendedprice, out_partkey, count, date_lt):
    N = l_shipdate.numel()
    if N:
        _compact[(triton.cdiv(N, 1024),)](l_shipdate, N, date_lt, BLOCK=1024)
