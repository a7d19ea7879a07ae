-- TPC-H/TPC-R Forecasting Revenue Change Query (Q6)
-- Functional Query Definition (TPC-H 3.0, queries/6.sql), qgen's substitution parameters kept:
-- :1 DATE (January 1st of a year), :2 DISCOUNT, :3 QUANTITY.
select
	sum(l_extendedprice * l_discount) as revenue
from
	lineitem
where
	l_shipdate >= date ':1'
	and l_shipdate < date ':1' + interval '1' year
	and l_discount between :2 - 0.01 and :2 + 0.01
	and l_quantity < :3;
