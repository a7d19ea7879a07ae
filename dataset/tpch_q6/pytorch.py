"""tpch_q6 as a PyTorch user writes it: boolean masks on the int64/int32 columns, a masked product,
a sum (exact int64, as the task's integer money). Measured as the targets torch_eager and
torch_compile."""
import torch


def run(l_shipdate, l_discount, l_quantity, l_extendedprice, revenue, date_lo, date_hi, discount_lo,
        discount_hi, quantity_lt):
    keep = ((l_shipdate >= date_lo) & (l_shipdate < date_hi) & (l_discount >= discount_lo)
            & (l_discount <= discount_hi) & (l_quantity < quantity_lt))
    revenue.copy_(torch.where(keep, l_extendedprice * l_discount, 0).sum().reshape(1))
