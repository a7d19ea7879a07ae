"""radix_sort_pairs as a PyTorch user writes it: torch.sort(stable=True) of the keys, then the values
gathered with the returned permutation. torch.sort has no uint32 kernel, so users widen the keys to
int64 first (`keys.long()`: a materialised 8 B copy per key, exact for every uint32 value); the
sort then runs on 8-byte keys and returns int64 indices. The gather runs on the values' bits
viewed as int32 (indexing has no uint32 kernel either; the view copies nothing and keeps the bits).
Measured as the targets torch_eager and torch_compile."""
import torch


def run(keys, values, keys_out, values_out):
    sorted_keys, order = torch.sort(keys.long(), stable=True)
    keys_out.copy_(sorted_keys)
    values_out.view(torch.int32).copy_(values.view(torch.int32)[order])
