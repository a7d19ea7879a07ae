-- Q6 with its range bounds written out, for the check workloads whose parameters are not of
-- qgen's form (a one-day range, every row or no row kept): the same select list and predicates
-- as q6.sql, the bounds taken from the workload's scalars.
select
	sum(l_extendedprice * l_discount) as revenue
from
	lineitem
where
	l_shipdate >= date ':date_lo'
	and l_shipdate < date ':date_hi'
	and l_discount between :discount_lo and :discount_hi
	and l_quantity < :quantity_lt;
