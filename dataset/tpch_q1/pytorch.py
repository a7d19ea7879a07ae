"""tpch_q1 as a PyTorch user writes it: the shipdate mask, a group index from the two flag columns,
index_add_ of the six sums over the six groups, the averages as float64 divisions. sum_charge
exceeds int64 at SF100, so it is summed as 32-bit halves and carried into the task's 128-bit
(high, low) words on the device. Measured as the targets torch_eager and torch_compile."""
import torch

_MIN = -(1 << 63)


def run(l_returnflag, l_linestatus, l_quantity, l_extendedprice, l_discount, l_tax, l_shipdate, sum_qty,
        sum_base_price, sum_disc_price, sum_charge, avg_qty, avg_price, avg_disc, count_order, shipdate_max):
    keep = l_shipdate <= shipdate_max
    # Groups A/N/R x F/O in the task's order: flag index * 2 + status index.
    flag = (l_returnflag == ord("N")).long() + 2 * (l_returnflag == ord("R")).long()
    g = (2 * flag + (l_linestatus == ord("O")).long())[keep]
    qty, price, disc, tax = l_quantity[keep], l_extendedprice[keep], l_discount[keep], l_tax[keep]
    disc_price = price * (100 - disc)
    charge = disc_price * (100 + tax)
    vals = torch.stack([qty, price, disc_price, disc, torch.ones_like(qty), charge & 0xFFFFFFFF, charge >> 32])
    sums = torch.zeros(7, 6, dtype=torch.int64, device=qty.device).index_add_(1, g, vals)
    sum_qty.copy_(sums[0])
    sum_base_price.copy_(sums[1])
    sum_disc_price.copy_(sums[2])
    count_order.copy_(sums[4])
    # 128-bit sum_charge = hi * 2^32 + lo: low word wraps mod 2^64, the carry is an unsigned compare.
    lo, hi = sums[5], sums[6]
    low = lo + (hi << 32)
    carry = ((low ^ _MIN) < (lo ^ _MIN)).long()
    sum_charge.copy_(torch.stack([(hi >> 32) + carry, low], dim=1))
    n = sums[4].clamp(min=1).double()
    avg_qty.copy_(sums[0].double() / n)
    avg_price.copy_(sums[1].double() / n)
    avg_disc.copy_(sums[3].double() / n)
