// tpch_q1 — the per-row and per-thread arithmetic of the expert's `packed` variant
// (expert.cu, -DQ1_PACKED=1), shared by the kernel and the host emulation that checks it
// (tests/unit/tasks/tpch_q1/test_tolerance.cpp), so the test runs the kernel's own code.
//
// Fast path: a row is "in domain" when, as unsigned 64-bit values, quantity < 64, discount <= 100,
// tax <= 100 and extendedprice < 2^24 (the spec's domains are 1..50, 0..10, 0..8 and
// 90000..209900 x 50 < 2^24; a negative value fails as a huge unsigned one). Such a row's
// discounted price fits 32 bits (< 2^24 x 100) and its charge 39 bits (< 2^24 x 100 x 200): one
// 32-bit multiply and one 32x32->64 multiply. Per group a thread keeps 64-bit sums of price,
// discounted price and charge, and ONE packed word for the small fields: quantity in bits 0-20,
// discount in bits 21-41, count in bits 42-63. Every kFlushRows rows (at most) the packed words
// and the charge sums are flushed into exact sums (the Sink), so no field overflows and the
// per-thread charge stays below 2^53 (a block's 256 threads below 2^61).
// Slow path: a row outside the domain adds its exact contributions (as reference.cpp computes
// them: int64 sums that wrap, the charge a 128-bit product of the signed int64 disc price and
// 100 + tax) straight into the Sink.
#pragma once
#include <cstdint>

#include "q1_args.h"

#if defined(__CUDACC__)
#define Q1_UNROLL _Pragma("unroll")
#else
#define Q1_UNROLL
#endif

namespace q1::packed {

inline constexpr int kSums = 6;  ///< per group, the layout of the sums: qty, base, disc price, charge, discount, count
inline constexpr int kDiscShift = 21, kCountShift = 42;
inline constexpr uint64_t kFieldMask = (uint64_t{1} << kDiscShift) - 1;  ///< quantity and discount fields
inline constexpr uint64_t kQtyLimit = 64, kDiscMax = 100, kTaxMax = 100, kPriceLimit = uint64_t{1} << 24;
/// Rows a thread adds into its packed words (and charge sums) between two flushes.
inline constexpr int64_t kFlushRows = 16384;
static_assert(kFlushRows * (kQtyLimit - 1) <= kFieldMask, "quantity field overflows");
static_assert(kFlushRows * kDiscMax <= kFieldMask, "discount field overflows");
static_assert(static_cast<uint64_t>(kFlushRows) < (uint64_t{1} << (64 - kCountShift)), "count field overflows");
/// The largest charge of an in-domain row, and of a thread between flushes.
inline constexpr uint64_t kRowChargeMax = (kPriceLimit - 1) * 100 * (100 + kTaxMax);
static_assert(kFlushRows * kRowChargeMax < (uint64_t{1} << 53), "per-thread charge bound");

/// The row's group exactly as the default expert computes it (2 * flag index + status index; a
/// flag outside A, N, R counts as A and a status other than 'O' as F; the generator never makes one).
Q1_HD int group(int8_t flag, int8_t status) { return 2 * ((flag == 'N') + 2 * (flag == 'R')) + (status == 'O'); }

/// 0x80 in each byte of v equal to the byte c, 0 in the others (exact for every byte value: the
/// low 7 bits are added without a carry across bytes).
Q1_HD uint32_t match4(uint32_t v, uint8_t c) {
  const uint32_t t = v ^ (0x01010101u * c);
  return ~(((t & 0x7f7f7f7fu) + 0x7f7f7f7fu) | t) & 0x80808080u;
}
/// group() of four rows at once: byte r of the result is group(byte r of flags, byte r of status).
Q1_HD uint32_t group4(uint32_t flags, uint32_t status) {
  return (match4(flags, 'N') >> 6) | (match4(flags, 'R') >> 5) | (match4(status, 'O') >> 7);
}
/// The group a row adds into, or kNoGroup (none) when it is not kept or not in the domain.
inline constexpr uint32_t kNoGroup = 8;

/// As uint64: quantity < 64, price < 2^24, discount <= 100, tax <= 100 (the high words zero, then
/// the low words' bounds; one OR of the high words, no 64-bit compares).
Q1_HD bool in_domain(int64_t qty, int64_t price, int64_t disc, int64_t tax) {
  const uint64_t q = static_cast<uint64_t>(qty), p = static_cast<uint64_t>(price), x = static_cast<uint64_t>(disc),
                 t = static_cast<uint64_t>(tax);
  const uint32_t high = static_cast<uint32_t>(q >> 32) | static_cast<uint32_t>(p >> 32) |
                        static_cast<uint32_t>(x >> 32) | static_cast<uint32_t>(t >> 32) |
                        (static_cast<uint32_t>(p) >> 24) | (static_cast<uint32_t>(q) >> 6);
  const uint32_t xt = static_cast<uint32_t>(x) > static_cast<uint32_t>(t) ? static_cast<uint32_t>(x)
                                                                          : static_cast<uint32_t>(t);
  static_assert(kPriceLimit == uint64_t{1} << 24 && kQtyLimit == 64 && kDiscMax == kTaxMax, "in_domain's shifts");
  return high == 0 && xt <= kDiscMax;
}

// In-domain rows: the low 32 bits of each column hold its value.
Q1_HD uint32_t disc_price(uint32_t price, uint32_t disc) { return price * (100u - disc); }
Q1_HD uint64_t charge(uint32_t dp, uint32_t tax) { return static_cast<uint64_t>(dp) * (100u + tax); }
/// quantity + discount << 21 + 1 << 42: the low word from the two fields, the high word a constant.
Q1_HD uint64_t pack(uint32_t qty, uint32_t disc) {
  return static_cast<uint64_t>(qty | (disc << kDiscShift)) | (uint64_t{1} << kCountShift);
}
Q1_HD uint64_t unpack_qty(uint64_t p) { return p & kFieldMask; }
Q1_HD uint64_t unpack_disc(uint64_t p) { return (p >> kDiscShift) & kFieldMask; }
Q1_HD uint64_t unpack_count(uint64_t p) { return p >> kCountShift; }

/// High 64 bits of the unsigned 128-bit product.
Q1_HD uint64_t umulhi(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 u128;
  return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64);
#endif
}

/// A row's contributions exactly as reference.cpp adds them, for any int64 values (sums modulo
/// 2^64; the charge the signed 64 x 64 -> 128-bit product of dp and 100 + tax, modulo 2^128).
struct Exact {
  uint64_t qty, base, dp, disc, charge_hi, charge_lo;
};
Q1_HD Exact exact_row(int64_t qty, int64_t price, int64_t disc, int64_t tax) {
  const uint64_t dp = static_cast<uint64_t>(price) * (uint64_t{100} - static_cast<uint64_t>(disc));
  const uint64_t t = uint64_t{100} + static_cast<uint64_t>(tax);
  // Signed high word from the unsigned one: subtract b where a < 0 and a where b < 0 (mod 2^64).
  uint64_t hi = umulhi(dp, t);
  if (static_cast<int64_t>(dp) < 0) hi -= t;
  if (static_cast<int64_t>(t) < 0) hi -= dp;
  return {static_cast<uint64_t>(qty), static_cast<uint64_t>(price), dp, static_cast<uint64_t>(disc), hi, dp * t};
}

/// 1 when adding `v` to a word that held `old` carried out of it.
Q1_HD uint64_t carry_of(uint64_t old, uint64_t v) { return old + v < old ? 1 : 0; }

/// A thread's accumulators: 64-bit sums per group and the packed small fields.
struct Acc {
  uint64_t base[kGroups], dp[kGroups], charge[kGroups], packed[kGroups];
};

/// An in-domain row into group gg (none when gg >= kGroups), its values from disc_price, charge
/// and pack. Per group a 0/1 factor m = (gg == k) and multiply-adds of 32-bit operands into the
/// 64-bit sums (IMAD.WIDE.U32 acc = m * v + acc on the GPU; the charge and packed words as their
/// low half wide and their high half into the high word): no 64-bit multiply, no carry chain to
/// predicate (ptxas turns a predicated 64-bit add into add, add-with-carry and two selects).
Q1_HD void add_fast(Acc& a, uint32_t gg, uint32_t price, uint32_t dp, uint64_t ch, uint64_t pk) {
  const uint32_t ch_lo = static_cast<uint32_t>(ch), ch_hi = static_cast<uint32_t>(ch >> 32);
  const uint32_t pk_lo = static_cast<uint32_t>(pk), pk_hi = static_cast<uint32_t>(pk >> 32);
  Q1_UNROLL
  for (int k = 0; k < kGroups; ++k) {
    const uint32_t m = gg == static_cast<uint32_t>(k) ? 1u : 0u;
#if defined(__CUDA_ARCH__)
    // Inline PTX: written in C++ the compiler sees m is 0 or 1 and turns each product into selects.
    asm("{\n\t.reg .u32 lo, hi;\n\t"
        "mad.wide.u32 %0, %4, %5, %0;\n\t"
        "mad.wide.u32 %1, %4, %6, %1;\n\t"
        "mad.wide.u32 %2, %4, %7, %2;\n\t"
        "mov.b64 {lo, hi}, %2;\n\t"
        "mad.lo.u32 hi, %4, %8, hi;\n\t"
        "mov.b64 %2, {lo, hi};\n\t"
        "mad.wide.u32 %3, %4, %9, %3;\n\t"
        "mov.b64 {lo, hi}, %3;\n\t"
        "mad.lo.u32 hi, %4, %10, hi;\n\t"
        "mov.b64 %3, {lo, hi};\n\t}"
        : "+l"(a.base[k]), "+l"(a.dp[k]), "+l"(a.charge[k]), "+l"(a.packed[k])
        : "r"(m), "r"(price), "r"(dp), "r"(ch_lo), "r"(ch_hi), "r"(pk_lo), "r"(pk_hi));
#else
    a.base[k] += static_cast<uint64_t>(m) * price;
    a.dp[k] += static_cast<uint64_t>(m) * dp;
    a.charge[k] += static_cast<uint64_t>(m) * ch_lo + (static_cast<uint64_t>(m * ch_hi) << 32);
    a.packed[k] += static_cast<uint64_t>(m) * pk_lo + (static_cast<uint64_t>(m * pk_hi) << 32);
#endif
  }
}
/// A row with 32-bit column values (in domain) into group gg.
Q1_HD void add_row(Acc& a, uint32_t gg, uint32_t qty, uint32_t price, uint32_t disc, uint32_t tax) {
  const uint32_t dp = disc_price(price, disc);
  add_fast(a, gg, price, dp, charge(dp, tax), pack(qty, disc));
}

/// An out-of-domain row's exact contributions into the Sink (s.add(index, v): sums[index] += v;
/// s.add_charge(group, hi, lo): the 128-bit charge += hi:lo).
template <class Sink>
Q1_HD void add_slow(Sink& s, int g, int64_t qty, int64_t price, int64_t disc, int64_t tax) {
  const Exact e = exact_row(qty, price, disc, tax);
  s.add(g * kSums + 0, e.qty);
  s.add(g * kSums + 1, e.base);
  s.add(g * kSums + 2, e.dp);
  s.add(g * kSums + 4, e.disc);
  s.add(g * kSums + 5, 1);
  s.add_charge(g, e.charge_hi, e.charge_lo);
}

/// The packed words and the charge sums into the Sink, and cleared (base and disc price sums wrap
/// modulo 2^64 as the reference's do and need no flush).
template <class Sink>
Q1_HD void flush(Acc& a, Sink& s) {
  Q1_UNROLL
  for (int k = 0; k < kGroups; ++k) {
    if (a.packed[k] != 0) {
      s.add(k * kSums + 0, unpack_qty(a.packed[k]));
      s.add(k * kSums + 4, unpack_disc(a.packed[k]));
      s.add(k * kSums + 5, unpack_count(a.packed[k]));
      s.add_charge(k, 0, a.charge[k]);
    }
    a.packed[k] = 0;
    a.charge[k] = 0;
  }
}

/// Group k's six sums (the layout of kSums) from a thread's accumulators.
Q1_HD void sums_of(const Acc& a, int k, uint64_t out[kSums]) {
  out[0] = unpack_qty(a.packed[k]);
  out[1] = a.base[k];
  out[2] = a.dp[k];
  out[3] = a.charge[k];
  out[4] = unpack_disc(a.packed[k]);
  out[5] = unpack_count(a.packed[k]);
}

}  // namespace q1::packed
