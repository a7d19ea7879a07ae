"""groupby_aggregate, triton track: starter. Read spec.md: for each distinct int64 key of the N rows
write one row (key, count, sum, min, max of the int64 values; the sum wraps modulo 2^64) in the
first num_groups rows of the five outputs, in any order, and num_groups their number.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
until you write it (a hash table in a scratch tensor, aggregated with atomics, then compacted).
"""
import triton
import triton.language as tl


@triton.jit
def _aggregate(keys_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    # TODO: insert each key into a hash table, update count/sum/min/max, then emit the groups.


def run(keys, values, out_keys, out_count, out_sum, out_min, out_max, num_groups):
    N = keys.numel()
    if N:
        _aggregate[(triton.cdiv(N, 1024),)](keys, N, BLOCK=1024)
