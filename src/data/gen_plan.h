#pragma once
/// The per-element generator functions shared by generate_host and generate_device.
/// A GenPlan is a trivially copyable digest of a GenRequest (parsed parameters, keys, constants
/// precomputed on the host); gen_value(plan, i) computes element i from the plan alone.
/// docs/generators.md documents every kind and its sub-stream use.
#include <cstdint>

#include "core/dtype.h"
#include "data/dtype_bits.h"
#include "data/exact_math.h"
#include "data/hd.h"
#include "data/philox.h"

namespace d2k::data {

enum class GenKind : std::uint8_t {
  normal, uniform, randint, constant, arange, unique_keys, join_probe_keys, zipf,
  ragged_offsets,  ///< also powerlaw_csr part=row_offsets (Pareto weights)
  tpch_lineitem,
  layer_stack_offsets,
  dynamic_map_codes,
  graph_row_ptr,  ///< graph_csr part=row_ptr (a scan of Pareto weights, plus heavy rows)
  graph_col_idx,  ///< graph_csr part=col_idx (needs the row pointer: per-row work)
};

enum class TpchColumn : std::uint8_t {
  quantity, extendedprice, discount, tax, returnflag, linestatus, shipdate, commitdate, receiptdate, orderdate,
  partkey,
};

/// TPC-H dates as days since 1970-01-01.
inline constexpr std::int64_t kTpchStartDate = 8035;    // 1992-01-01
inline constexpr std::int64_t kTpchCurrentDate = 9298;  // 1995-06-17
inline constexpr std::int64_t kTpchEndDate = 10591;     // 1998-12-31
inline constexpr std::uint32_t kTpchOrderDays = static_cast<std::uint32_t>(kTpchEndDate - 151 - kTpchStartDate + 1);

inline constexpr int kFeistelRounds = 8;

/// A keyed bijection of [0, 2^bits) (unbalanced Feistel network whose halves alternate in size)
/// restricted to [0, domain) by cycle walking.
struct FeistelPerm {
  std::uint64_t domain = 1;
  int lbits = 0, rbits = 0;  ///< high and low half widths; lbits + rbits = bits
  std::uint64_t rk[kFeistelRounds] = {};
};

struct ZipfPlan {
  std::int64_t n = 1;
  double s = 1, h_x1 = 0, h_n = 0, sval = 0;
};

/// layer_stack_offsets: a transformer's parameter list (Llama / Qwen-MoE order) laid end to end.
struct LayerStackPlan {
  std::int64_t groups = 0;  ///< segments (count - 1)
  std::int64_t total = 0;   ///< elements of the buffer the offsets partition
  std::uint64_t hidden = 1, inter = 1, kv = 1, vocab = 1, experts = 0;
  std::uint64_t sum = 0;    ///< real parameter count of the `groups` tensors (< 2^63)
};

/// graph_csr: a CSR sparsity pattern with power-law row lengths, optional heavy (dense) rows at a
/// fixed stride, and sorted columns that mix a near-diagonal window with spread-out columns.
struct CsrPlan {
  // row_ptr
  std::int64_t rows = 0;       ///< count - 1 (row_ptr) or the row pointer's count - 1 (col_idx)
  std::int64_t nnz = 0;
  std::int64_t heavy = 0;      ///< heavy rows: r = 0, stride, 2*stride, ... (heavy of them)
  std::int64_t heavy_len = 0;  ///< each heavy row's length
  std::int64_t stride = 1;     ///< rows / heavy
  std::int64_t light_nnz = 0;  ///< nnz - heavy * heavy_len, shared by the other rows
  double alpha = 1.5;          ///< Pareto exponent of the light rows' weights; 0: equal weights
  double quantum = 1;          ///< weight scale 2^q: rows * (2^20 * quantum + 1) < 2^63
  // col_idx
  std::int64_t cols = 1;
  std::int64_t band = 32;      ///< half-width of the near-diagonal window
  std::uint64_t local_q = 0;   ///< the near-diagonal share of a row, in units of 2^-20
};

struct GenPlan {
  GenKind kind = GenKind::constant;
  PhiloxKey key;            ///< (seed, stream) key of this input
  bool int_valued = false;  ///< constant / arange: integer arithmetic
  double a = 0, b = 0;      ///< normal mean,std | uniform low,high | constant | arange start,step | join match_rate
  std::int64_t ia = 0, ib = 0;  ///< randint low | constant | arange start,step | unique/join low
  std::uint64_t range = 0;  ///< randint: high - low
  FeistelPerm perm;         ///< unique_keys: own; join_probe_keys: the build side's
  std::int64_t build_count = 0;
  ZipfPlan zipf;
  bool scatter = false;     ///< zipf: ranks mapped to low + perm(rank) (sparse keys)
  TpchColumn column = TpchColumn::quantity;
  bool decimal = false;     ///< tpch money/percent columns as decimal values (float dtypes)
  std::int64_t parts = 200000;
  // ragged_offsets / powerlaw_csr row_offsets
  std::int64_t total = 0;
  double skew = 1.0;
  bool pareto = false;
  double alpha = 1.5;
  LayerStackPlan stack;
  bool signed_map = true;  ///< dynamic_map_codes: the signed map (else the unsigned one)
  CsrPlan csr;
};

/// One generated element: an integer or a real.
struct GenValue {
  double d = 0;
  std::int64_t i = 0;
  bool is_int = false;
};

D2K_HD double two_m53() { return 1.1102230246251565404e-16; }  // 2^-53

/// Uniform on [0, 1) with 53 random bits.
D2K_HD double u01(std::uint32_t hi, std::uint32_t lo) {
  return (xd(u64_to_double(join64(hi, lo) >> 11)) * two_m53()).v;
}
/// Uniform on (0, 1] with 53 random bits (never 0: safe for log).
D2K_HD double u01_open0(std::uint32_t hi, std::uint32_t lo) {
  return (xd(u64_to_double((join64(hi, lo) >> 11) + 1)) * two_m53()).v;
}

/// A standard normal from one Philox block (Box-Muller, cosine branch).
D2K_HD double std_normal(Philox4 b) {
  const xd u1 = u01_open0(b.v[0], b.v[1]);
  const double u2 = u01(b.v[2], b.v[3]);
  const xd r = xsqrt(xd(-2.0) * xlog(u1.v));
  double s, c;
  sincos_2pi(u2, &s, &c);
  return (r * c).v;
}

D2K_HD std::uint64_t low_mask(int bits) { return bits >= 64 ? ~0ull : ((1ull << bits) - 1ull); }

/// One pass of the Feistel network over [0, 2^(lbits+rbits)).
D2K_HD std::uint64_t feistel(const FeistelPerm& p, std::uint64_t x) {
  int lb = p.lbits, rb = p.rbits;
  std::uint64_t L = x >> rb, R = x & low_mask(rb);
  for (int r = 0; r < kFeistelRounds; ++r) {
    const std::uint64_t F = mix64(R ^ p.rk[r]) & low_mask(lb);
    const std::uint64_t nl = R, nr = L ^ F;  // (R: rb bits, L^F: lb bits): widths swap
    L = nl;
    R = nr;
    const int t = lb;
    lb = rb;
    rb = t;
  }
  return (L << rb) | R;
}

/// The permutation of [0, domain): cycle-walk the power-of-two bijection back into the domain.
D2K_HD std::uint64_t permute(const FeistelPerm& p, std::uint64_t x) {
  do {
    x = feistel(p, x);
  } while (x >= p.domain);
  return x;
}

// Zipf by rejection-inversion (Hoermann and Derflinger 1996) on ranks 1..n with exponent s > 0.
D2K_HD double zipf_h(double s, double x) { return xexp((-xd(s) * xlog(x)).v); }
D2K_HD double zipf_helper1(double x) {  // log1p(x)/x
  if (abs_d(x) > 1e-8) return (xd(xlog1p(x)) / x).v;
  return (xd(1.0) - xd(x) * (xd(0.5) - xd(x) * (xd(1.0 / 3.0) - xd(0.25) * x))).v;
}
D2K_HD double zipf_helper2(double x) {  // expm1(x)/x
  if (abs_d(x) > 1e-8) return (xd(xexpm1(x)) / x).v;
  return (xd(1.0) + xd(x) * 0.5 * (xd(1.0) + xd(x) * (1.0 / 3.0) * (xd(1.0) + xd(0.25) * x))).v;
}
/// H(x) = (x^(1-s) - 1) / (1 - s), continuous at s = 1 (log x).
D2K_HD double zipf_hint(double s, double x) {
  const xd lx = xlog(x);
  return (xd(zipf_helper2(((xd(1.0) - s) * lx).v)) * lx).v;
}
D2K_HD double zipf_hint_inv(double s, double x) {
  xd t = xd(x) * (xd(1.0) - s);
  if (t.v < -1.0) t = -1.0;
  return xexp((xd(zipf_helper1(t.v)) * x).v);
}
/// The constants of the sampler for (n, s).
D2K_HD ZipfPlan zipf_plan(std::int64_t n, double s) {
  ZipfPlan z;
  z.n = n;
  z.s = s;
  z.h_x1 = (xd(zipf_hint(s, 1.5)) - 1.0).v;
  z.h_n = zipf_hint(s, (xd(i64_to_double(n)) + 0.5).v);
  z.sval = (xd(2.0) - zipf_hint_inv(s, (xd(zipf_hint(s, 2.5)) - zipf_h(s, 2.0)).v)).v;
  return z;
}
/// Rank in [0, n) of element `index`; attempt t draws from sub-stream t.
D2K_HD std::int64_t zipf_sample(const ZipfPlan& z, PhiloxKey key, std::uint64_t index) {
  std::int64_t k = 1;
  for (std::uint32_t t = 0; t < 64; ++t) {
    const Philox4 b = philox_block(key, index, t);
    const xd u = xd(z.h_n) + xd(u01(b.v[0], b.v[1])) * (xd(z.h_x1) - z.h_n);
    const double x = zipf_hint_inv(z.s, u.v);
    k = double_to_i64_trunc((xd(x) + 0.5).v);
    if (k < 1) k = 1;
    else if (k > z.n) k = z.n;
    if ((xd(i64_to_double(k)) - x).v <= z.sval ||
        u.v >= (xd(zipf_hint(z.s, (xd(i64_to_double(k)) + 0.5).v)) - zipf_h(z.s, i64_to_double(k))).v)
      break;
  }
  return k - 1;
}

/// TPC-H lineitem column of row `row`; all columns of a table share `key` (the table stream).
D2K_HD GenValue tpch_value(const GenPlan& p, std::uint64_t row) {
  GenValue out;
  out.is_int = true;
  auto money = [&](std::int64_t hundredths) {
    if (p.decimal) {
      out.is_int = false;
      out.d = (xd(i64_to_double(hundredths)) / 100.0).v;
    } else {
      out.i = hundredths;
    }
  };
  switch (p.column) {
    case TpchColumn::quantity:
      out.i = 1 + bounded32(philox_block(p.key, row, 1).v[0], 50);
      return out;
    case TpchColumn::partkey:
      out.i = 1 + static_cast<std::int64_t>(bounded64(
          join64(philox_block(p.key, row, 2).v[0], philox_block(p.key, row, 2).v[1]),
          static_cast<std::uint64_t>(p.parts)));
      return out;
    case TpchColumn::extendedprice: {
      const std::int64_t qty = 1 + bounded32(philox_block(p.key, row, 1).v[0], 50);
      const Philox4 b = philox_block(p.key, row, 2);
      const std::int64_t pk = 1 + static_cast<std::int64_t>(bounded64(join64(b.v[0], b.v[1]),
                                                                       static_cast<std::uint64_t>(p.parts)));
      const std::int64_t retail = 90000 + (pk / 10) % 20001 + 100 * (pk % 1000);  // cents
      money(qty * retail);
      return out;
    }
    case TpchColumn::discount: money(bounded32(philox_block(p.key, row, 3).v[0], 11)); return out;
    case TpchColumn::tax: money(bounded32(philox_block(p.key, row, 3).v[1], 9)); return out;
    default: break;
  }
  const Philox4 b = philox_block(p.key, row, 4);
  const std::int64_t order = kTpchStartDate + bounded32(b.v[0], kTpchOrderDays);
  const std::int64_t ship = order + 1 + bounded32(b.v[1], 121);
  const std::int64_t commit = order + 30 + bounded32(b.v[2], 61);
  const std::int64_t receipt = ship + 1 + bounded32(b.v[3], 30);
  switch (p.column) {
    case TpchColumn::orderdate: out.i = order; break;
    case TpchColumn::shipdate: out.i = ship; break;
    case TpchColumn::commitdate: out.i = commit; break;
    case TpchColumn::receiptdate: out.i = receipt; break;
    case TpchColumn::returnflag:
      out.i = receipt <= kTpchCurrentDate ? ((philox_block(p.key, row, 5).v[0] & 1u) ? 'R' : 'A') : 'N';
      break;
    default: out.i = ship > kTpchCurrentDate ? 'O' : 'F'; break;  // linestatus
  }
  return out;
}

// layer_stack_offsets. One decoder layer's tensors, in the order of Hugging Face's
// named_parameters(): q_proj (H x H), k_proj and v_proj (KV x H), o_proj (H x H); the MLP: dense
// gate_proj, up_proj, down_proj (I x H each), or with E experts a router (E x H) then each expert's
// gate, up and down (I x H each); input_layernorm and post_attention_layernorm (H each).
// The stack: embed_tokens (V x H), the layers repeated (the last one cut short where the segment
// count ends inside it), the final norm (H) and lm_head (V x H).

/// Tensors of one decoder layer.
D2K_HD std::uint64_t layer_tensors(const LayerStackPlan& s) {
  return 6 + (s.experts > 0 ? 1 + 3 * s.experts : 3);
}
/// Parameters of the first j tensors of one decoder layer (j <= layer_tensors).
D2K_HD std::uint64_t layer_prefix(const LayerStackPlan& s, std::uint64_t j) {
  const std::uint64_t HH = s.hidden * s.hidden, KH = s.kv * s.hidden, IH = s.inter * s.hidden;
  const std::uint64_t attn[5] = {0, HH, HH + KH, HH + 2 * KH, 2 * HH + 2 * KH};
  if (j <= 4) return attn[j];
  std::uint64_t p = attn[4];
  j -= 4;
  if (s.experts > 0) {  // the router
    p += s.experts * s.hidden;
    j -= 1;
  }
  const std::uint64_t mlp = 3 * (s.experts > 0 ? s.experts : 1);
  if (j <= mlp) return p + j * IH;
  return p + mlp * IH + (j - mlp) * s.hidden;
}
/// Real parameters of segments [0, g) of a stack of s.groups segments (g <= groups).
D2K_HD std::uint64_t layer_stack_prefix(const LayerStackPlan& s, std::int64_t g) {
  if (g <= 0) return 0;
  const std::int64_t G = s.groups;
  const std::uint64_t VH = s.vocab * s.hidden;
  const std::int64_t mid = G >= 3 ? G - 3 : 0;  // segments of the layer stack
  const std::uint64_t k = static_cast<std::uint64_t>(g - 1 < mid ? g - 1 : mid);
  const std::uint64_t lt = layer_tensors(s);
  std::uint64_t p = VH + (k / lt) * layer_prefix(s, lt) + layer_prefix(s, k % lt);
  if (G >= 3 && g >= G - 1) p += s.hidden;  // the final norm
  if (G >= 2 && g == G) p += VH;            // lm_head
  return p;
}
/// offsets[g]: g + floor((total - groups) * P(g) / P(groups)): every segment holds at least one
/// element and the rest is shared in proportion to the real tensor sizes; exact integer arithmetic.
D2K_HD std::int64_t layer_stack_offset(const LayerStackPlan& s, std::int64_t g) {
  if (s.groups == 0 || g <= 0) return 0;
  const u128 num = static_cast<u128>(static_cast<std::uint64_t>(s.total - s.groups)) * layer_stack_prefix(s, g);
  return g + static_cast<std::int64_t>(num / s.sum);
}

// dynamic_map_codes. bitsandbytes' dynamic quantisation map (create_dynamic_map with 7 exponent
// bits, 8 bits in all): for each decade i = 0..6, F_i values 10^(i-6) * (0.1 + 0.9 * (j + 1/2) / F_i),
// j < F_i, with F_i = 2^i (signed map, mirrored to negative values) or 2^(i+1) (unsigned map);
// then 0 and 1; sorted, 256 entries. The decades do not overlap, so entry k of one sign is
// closed-form.

/// The k-th positive magnitude of the map in ascending order (k < 127 signed, k < 254 unsigned).
D2K_HD double dynamic_map_magnitude(int k, bool is_signed) {
  const double pow10[7] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  const int base = is_signed ? k + 1 : k + 2;  // entries before decade i: 2^i - 1 (signed), 2^(i+1) - 2
  int top = 0;
  while ((base >> (top + 1)) != 0) ++top;  // floor(log2(base))
  const int i = is_signed ? top : top - 1;
  const int f = is_signed ? 1 << i : 1 << (i + 1);
  const int j = base - (1 << top);
  return (xd(pow10[i]) * (xd(0.1) + xd(0.9) * (2.0 * j + 1.0) / (2.0 * f))).v;
}

/// Entry `idx` (0..255) of the sorted map: signed [-mag(126..0), 0, mag(0..126), 1], unsigned
/// [0, mag(0..253), 1].
D2K_HD double dynamic_map_value(int idx, bool is_signed) {
  if (idx == 255) return 1.0;
  if (is_signed) {
    if (idx == 127) return 0.0;
    return idx > 127 ? dynamic_map_magnitude(idx - 128, true) : -dynamic_map_magnitude(126 - idx, true);
  }
  return idx == 0 ? 0.0 : dynamic_map_magnitude(idx - 1, false);
}

/// The index of the map entry nearest to x (ties to the lower index); x beyond the ends clamps.
D2K_HD int dynamic_map_nearest(double x, bool is_signed) {
  int lo = 0, hi = 255;  // value(lo) <= x < value(hi) once x is inside
  if (x <= dynamic_map_value(0, is_signed)) return 0;
  if (x >= 1.0) return 255;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (dynamic_map_value(mid, is_signed) <= x) lo = mid;
    else hi = mid;
  }
  const double dl = (xd(x) - dynamic_map_value(lo, is_signed)).v, dh = (xd(dynamic_map_value(hi, is_signed)) - x).v;
  return dh < dl ? hi : lo;
}

/// dynamic_map_codes element: a plausible optimizer state normalised by its block's absolute
/// maximum (std * z for the signed map, (std * z)^2 for the unsigned one, z standard normal,
/// clamped to the map's range), quantised to the nearest entry's index.
D2K_HD std::int64_t dynamic_map_code(const GenPlan& p, std::uint64_t i) {
  const xd s = xd(p.b) * std_normal(philox_block(p.key, i, 0));
  return dynamic_map_nearest(p.signed_map ? s.v : (s * s).v, p.signed_map);
}

/// Element `i` of every kind except ragged_offsets (which needs a prefix sum).
D2K_HD GenValue gen_value(const GenPlan& p, std::uint64_t i) {
  GenValue out;
  switch (p.kind) {
    case GenKind::normal: {
      const double z = std_normal(philox_block(p.key, i, 0));
      out.d = (xd(p.a) + xd(p.b) * z).v;
      return out;
    }
    case GenKind::uniform: {
      const Philox4 b = philox_block(p.key, i, 0);
      out.d = (xd(p.a) + (xd(p.b) - p.a) * u01(b.v[0], b.v[1])).v;
      return out;
    }
    case GenKind::randint: {
      const Philox4 b = philox_block(p.key, i, 0);
      out.is_int = true;
      out.i = static_cast<std::int64_t>(static_cast<std::uint64_t>(p.ia) + bounded64(join64(b.v[0], b.v[1]), p.range));
      return out;
    }
    case GenKind::constant:
      out.is_int = p.int_valued;
      out.i = p.ia;
      out.d = p.a;
      return out;
    case GenKind::arange:
      if (p.int_valued) {
        out.is_int = true;
        out.i = static_cast<std::int64_t>(static_cast<std::uint64_t>(p.ia) + i * static_cast<std::uint64_t>(p.ib));
      } else {
        out.d = (xd(p.a) + xd(u64_to_double(i)) * p.b).v;
      }
      return out;
    case GenKind::unique_keys:
      out.is_int = true;
      out.i = p.ia + static_cast<std::int64_t>(permute(p.perm, i));
      return out;
    case GenKind::join_probe_keys: {
      const Philox4 b = philox_block(p.key, i, 0);
      const bool match = u01(b.v[0], b.v[1]) < p.a;
      const std::uint64_t r = join64(b.v[2], b.v[3]);
      const std::uint64_t nb = static_cast<std::uint64_t>(p.build_count);
      const std::uint64_t j = match ? bounded64(r, nb) : nb + bounded64(r, p.perm.domain - nb);
      out.is_int = true;
      out.i = p.ia + static_cast<std::int64_t>(permute(p.perm, j));
      return out;
    }
    case GenKind::zipf:
      out.is_int = true;
      out.i = zipf_sample(p.zipf, p.key, i);
      if (p.scatter) out.i = p.ia + static_cast<std::int64_t>(permute(p.perm, static_cast<std::uint64_t>(out.i)));
      return out;
    case GenKind::tpch_lineitem: return tpch_value(p, i);
    case GenKind::layer_stack_offsets:
      out.is_int = true;
      out.i = layer_stack_offset(p.stack, static_cast<std::int64_t>(i));
      return out;
    case GenKind::dynamic_map_codes:
      out.is_int = true;
      out.i = dynamic_map_code(p, i);
      return out;
    case GenKind::ragged_offsets:
    case GenKind::graph_row_ptr:
    case GenKind::graph_col_idx: break;
  }
  return out;
}

/// Stores a generated value as element i of a tensor of type t.
D2K_HD void store_value(DType t, void* base, std::int64_t i, const GenValue& v) {
  if (v.is_int) store_int(t, base, i, v.i);
  else store_real(t, base, i, v.d);
}

/// ragged_offsets: integer weight of group g (>= 1).
D2K_HD std::uint64_t ragged_weight(const GenPlan& p, std::uint64_t g) {
  const Philox4 b = philox_block(p.key, g, 0);
  constexpr double kScale = 1048576.0;  // 2^20 quanta per unit weight
  double w;
  if (p.pareto) {
    // Pareto(alpha) on [1, inf): u^(-1/alpha), capped at 2^20 so weights stay below 2^41.
    const xd e = -xd(xlog(u01_open0(b.v[0], b.v[1]))) / p.alpha;
    w = e.v > 13.862943611198906 ? kScale : xexp(e.v);
  } else {
    // Log-normal with sigma = skew, the exponent clamped to [-20, 13].
    xd e = xd(p.skew) * std_normal(b);
    if (e.v > 13.0) e = 13.0;
    if (e.v < -20.0) e = -20.0;
    w = xexp(e.v);
  }
  return static_cast<std::uint64_t>(double_to_i64_trunc((xd(w) * kScale).v)) + 1;
}

/// offsets[g + 1] from the inclusive prefix P of weights and their sum W: floor(total * P / W).
D2K_HD std::int64_t ragged_offset(std::int64_t total, std::uint64_t prefix, std::uint64_t sum) {
  const u128 num = static_cast<u128>(static_cast<std::uint64_t>(total)) * prefix;
  return static_cast<std::int64_t>(num / sum);
}

// graph_csr (docs/generators.md). Row pointer: heavy rows (every stride-th row, `heavy` of them)
// hold heavy_len entries each; the other (light) rows share light_nnz in proportion to Pareto
// weights, o_light(m) = floor(light_nnz * P(m-1) / W) over their inclusive prefix P.

/// Integer weight (>= 1) of light row m: floor(min(u^(-1/alpha), 2^20) * quantum) + 1; alpha = 0
/// gives every row the same weight (equal lengths, +-1).
D2K_HD std::uint64_t csr_light_weight(const CsrPlan& c, PhiloxKey key, std::uint64_t m) {
  if (c.alpha == 0) return static_cast<std::uint64_t>(double_to_i64_trunc(c.quantum));
  const Philox4 b = philox_block(key, m, 0);
  const xd e = -xd(xlog(u01_open0(b.v[0], b.v[1]))) / c.alpha;
  const double w = e.v > 13.862943611198906 ? 1048576.0 : xexp(e.v);
  return static_cast<std::uint64_t>(double_to_i64_trunc((xd(w) * c.quantum).v)) + 1;
}

/// Heavy rows among [0, r).
D2K_HD std::int64_t csr_heavy_before(const CsrPlan& c, std::int64_t r) {
  if (c.heavy == 0) return 0;
  const std::int64_t h = (r + c.stride - 1) / c.stride;
  return h < c.heavy ? h : c.heavy;
}

/// row_ptr[r] given the light rows' inclusive weight prefix (prefix[m] = w_0 + ... + w_m) and sum.
D2K_HD std::int64_t csr_row_ptr(const CsrPlan& c, std::int64_t r, const std::uint64_t* prefix, std::uint64_t sum) {
  const std::int64_t hb = csr_heavy_before(c, r);
  const std::int64_t m = r - hb;  // light rows before r
  const std::int64_t light = m == 0 ? 0 : ragged_offset(c.light_nnz, prefix[m - 1], sum);
  return hb * c.heavy_len + light;
}

/// Entry idx of `count` entries spread over [start, start + range): one per stratum
/// [floor(idx*range/count), floor((idx+1)*range/count)), uniform inside it. Sorted, and distinct
/// when count <= range; with count > range the strata are empty or single columns (repeats).
D2K_HD std::int64_t csr_stratum(std::int64_t start, std::uint64_t range, std::uint64_t count, std::uint64_t idx,
                                std::uint64_t r) {
  const std::uint64_t s0 = idx * range / count, s1 = (idx + 1) * range / count;
  return start + static_cast<std::int64_t>(s0 + (s1 > s0 ? bounded64(r, s1 - s0) : 0));
}

/// Column of entry k (global index j) of row `row`, which holds `len` entries. The row's columns
/// are three sorted runs: spread over [0, lo), a near-diagonal window [lo, hi) around
/// row * cols / rows (a local_q share of the row, at most the window), spread over [hi, cols).
D2K_HD std::int64_t csr_col(const CsrPlan& c, PhiloxKey key, std::int64_t row, std::int64_t k, std::int64_t len,
                            std::uint64_t j) {
  const Philox4 b = philox_block(key, j, 0);
  const std::uint64_t rnd = join64(b.v[0], b.v[1]);
  const std::uint64_t L = static_cast<std::uint64_t>(len), K = static_cast<std::uint64_t>(k);
  const std::uint64_t C = static_cast<std::uint64_t>(c.cols);
  if (L > C) return csr_stratum(0, C, L, K, rnd);  // longer than the matrix is wide: repeats
  const std::int64_t diag = c.rows > 0 ? static_cast<std::int64_t>(static_cast<u128>(row) * C / static_cast<std::uint64_t>(c.rows)) : 0;
  const std::int64_t lo = diag - c.band > 0 ? diag - c.band : 0;
  const std::int64_t hi = diag + c.band + 1 < c.cols ? diag + c.band + 1 : c.cols;
  const std::uint64_t W = static_cast<std::uint64_t>(hi - lo), A = static_cast<std::uint64_t>(lo),
                      B = C - static_cast<std::uint64_t>(hi);
  std::uint64_t n_loc = static_cast<std::uint64_t>((static_cast<u128>(L) * c.local_q) >> 20);
  if (n_loc > W) n_loc = W;
  std::uint64_t rest = L - n_loc;
  if (rest > A + B) {  // the spread runs are full: the window takes the rest (L <= C, so it fits)
    n_loc = L - A - B;
    rest = A + B;
  }
  std::uint64_t n_left = A + B > 0 ? static_cast<std::uint64_t>(static_cast<u128>(rest) * A / (A + B)) : 0;
  std::uint64_t n_right = rest - n_left;
  if (n_right > B) {
    n_right = B;
    n_left = rest - B;
  }
  if (n_left > A) n_left = A;
  if (K < n_left) return csr_stratum(0, A, n_left, K, rnd);
  if (K < n_left + n_loc) return csr_stratum(lo, W, n_loc, K - n_left, rnd);
  return csr_stratum(hi, B, L - n_left - n_loc, K - n_left - n_loc, rnd);
}

}  // namespace d2k::data
