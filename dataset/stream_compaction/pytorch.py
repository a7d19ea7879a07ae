"""stream_compaction as a PyTorch user writes it: a boolean mask, then boolean indexing of each
column (each `col[mask]` runs nonzero on the mask and a gather), copied into the first `count`
rows of the outputs. Measured as the targets torch_eager and torch_compile."""
import torch


def run(l_shipdate, l_extendedprice, l_partkey, out_shipdate, out_extendedprice, out_partkey, count, date_lt):
    mask = l_shipdate < date_lt
    kept = [l_shipdate[mask], l_extendedprice[mask], l_partkey[mask]]
    n = kept[0].numel()
    for out, col in zip((out_shipdate, out_extendedprice, out_partkey), kept):
        out[:n].copy_(col)
    count.fill_(n)
