"""groupby_aggregate as a PyTorch user writes it: torch.unique(return_inverse, return_counts) numbers
and counts the groups, index_add sums the values (int64 addition wraps on CUDA, as the task's sum
does), scatter_reduce with amin/amax gives the extremes. Measured as the targets torch_eager and
torch_compile."""
import torch


def run(keys, values, out_keys, out_count, out_sum, out_min, out_max, num_groups):
    uniq, inverse, counts = torch.unique(keys, return_inverse=True, return_counts=True)
    g = uniq.numel()
    out_keys[:g].copy_(uniq)
    out_count[:g].copy_(counts)
    out_sum[:g].zero_().index_add_(0, inverse, values)
    out_min[:g].copy_(values.new_zeros(g).scatter_reduce_(0, inverse, values, "amin", include_self=False))
    out_max[:g].copy_(values.new_zeros(g).scatter_reduce_(0, inverse, values, "amax", include_self=False))
    num_groups.fill_(g)
