"""hash_join, triton track: starter. Read spec.md: every probe row whose key equals a build key
(the build keys are distinct) yields one row (build payload, probe payload) in the first `count`
rows of the outputs, in any order; count holds their number.

d2k calls run() with the task's tensors (torch tensors over d2k's buffers) and scalars by name,
on d2k's stream. This skeleton launches a kernel that writes nothing, so it fails correctness
until you write it (a hash table in a scratch tensor, built then probed).
"""
import triton
import triton.language as tl


@triton.jit
def _probe(probe_keys_ptr, S, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < S
    # TODO: build a hash table of the build keys, probe it, append the matches, count them.


def run(build_keys, build_payload, probe_keys, probe_payload, out_build_payload, out_probe_payload, count):
    S = probe_keys.numel()
    if S:
        _probe[(triton.cdiv(S, 1024),)](probe_keys, S, BLOCK=1024)
