// chunked_linear_attention — the shared-memory layout and mma.sync fragment maps of expert.cu in one
// place, for the kernel and for the CPU test that replays them against the PTX fragment layouts
// (tests/unit/tasks/chunked_linear_attention: FragmentMaps).
//
// Per chunk of kC = 64 steps the CTA holds (bf16, rows padded by 8 elements = 16 bytes, so the 8
// rows a fragment load touches start 4 banks apart and a warp's 32-bit loads are conflict-free):
//   Qs  [kC][D + 8]   q of the chunk, row = step
//   Ks  [kC][D + 8]   k of the chunk, row = step             (B operand of Q K^T)
//   KwT [D][kC + 8]   k_j * 2^(cum_last - cum_j), transposed  (A operand of the state update)
//   VT  [DV][kC + 8]  v of the CTA's DV value columns, transposed (B operand of P V and K~^T V)
//   SbT [DV][D + 8]   the state at the chunk's start in bf16, transposed (B operand of Q S)
// Fragment registers hold two bf16 (lower index in the low half); g = lane / 4, t = lane % 4.
#pragma once

#if defined(__CUDACC__)
#define CLA_HD __host__ __device__ __forceinline__
#else
#define CLA_HD inline
#endif

namespace cla_layout {

constexpr int kC = 64;       // steps per chunk
constexpr int kWarps = 4;    // warp w owns the chunk's rows 16w..16w+15 and the state's rows w*D/4..
constexpr int kLdc = kC + 8; // row stride of KwT and VT

CLA_HD constexpr int ldd(int D) { return D + 8; }  // row stride of Qs, Ks and SbT

/// Where the staging and the state's publication write: element (step, col) of Qs or Ks, (dk, step)
/// of KwT, (dv, step) of VT, (dv, dk) of SbT.
CLA_HD constexpr int qk_at(int D, int step, int col) { return step * ldd(D) + col; }
CLA_HD constexpr int kwt_at(int dk, int step) { return dk * kLdc + step; }
CLA_HD constexpr int vt_at(int dv, int step) { return dv * kLdc + step; }
CLA_HD constexpr int sbt_at(int D, int dv, int dk) { return dv * ldd(D) + dk; }

/// A operand (row-major 16x16) register r of Q rows 16w.., k-step kk over the key dimension.
CLA_HD constexpr int q_frag(int D, int w, int kk, int lane, int r) {
  return (16 * w + lane / 4 + 8 * (r & 1)) * ldd(D) + 16 * kk + 2 * (lane % 4) + 8 * (r >> 1);
}
/// B operand (16x8, k = key dimension, n = step) register r of K^T: steps 8nt.., k-step kk.
CLA_HD constexpr int k_frag(int D, int nt, int kk, int lane, int r) {
  return (8 * nt + lane / 4) * ldd(D) + 16 * kk + 2 * (lane % 4) + 8 * r;
}
/// B operand (k = step, n = value column) register r of V: value columns 8nt.., steps 16kk...
CLA_HD constexpr int v_frag(int nt, int kk, int lane, int r) {
  return (8 * nt + lane / 4) * kLdc + 16 * kk + 2 * (lane % 4) + 8 * r;
}
/// B operand (k = key dimension, n = value column) register r of the state: columns 8nt.., k-step kk.
CLA_HD constexpr int s_frag(int D, int nt, int kk, int lane, int r) {
  return (8 * nt + lane / 4) * ldd(D) + 16 * kk + 2 * (lane % 4) + 8 * r;
}
/// A operand (m = key dimension, k = step) register r of K~^T: state rows m0.., steps 16kk...
CLA_HD constexpr int kw_frag(int m0, int kk, int lane, int r) {
  return (m0 + lane / 4 + 8 * (r & 1)) * kLdc + 16 * kk + 2 * (lane % 4) + 8 * (r >> 1);
}
/// Element e (0..3) of an m16n8 fp32 accumulator: its row in the 16 and column in the 8.
CLA_HD constexpr int acc_row(int lane, int e) { return lane / 4 + (e >= 2 ? 8 : 0); }
CLA_HD constexpr int acc_col(int lane, int e) { return (lane % 4) * 2 + (e & 1); }

/// Pair staging (expert.cu stage_pairs, CLA_PAIR_STAGING): item e covers steps 2 pair_of(e) and
/// 2 pair_of(e) + 1 of the 8 columns from pair_col(e); consecutive items (a warp's lanes) take
/// consecutive pairs of one column vector.
CLA_HD constexpr int pair_of(int e) { return e % (kC / 2); }
CLA_HD constexpr int pair_col(int e) { return 8 * (e / (kC / 2)); }

/// Elements of each shared array (bf16) and the fp32 cumulative decays, in this order; with
/// stages = 2 (the prefetch variant) a second Qs and Ks follow the decays.
CLA_HD constexpr int smem_elems_q(int D) { return kC * ldd(D); }
CLA_HD constexpr int smem_elems_kw(int D) { return D * kLdc; }
CLA_HD constexpr int smem_elems_v(int DV) { return DV * kLdc; }
CLA_HD constexpr int smem_elems_s(int D, int DV) { return DV * ldd(D); }
CLA_HD constexpr int smem_bytes(int D, int DV, int stages = 1) {
  return 2 * (2 * stages * smem_elems_q(D) + smem_elems_kw(D) + smem_elems_v(DV) + smem_elems_s(D, DV)) + 4 * kC;
}
/// The chunk-parallel variant's local-state pass holds KwT, VT and the decays only, in this order.
CLA_HD constexpr int smem_bytes_local(int D, int DV) { return 2 * (smem_elems_kw(D) + smem_elems_v(DV)) + 4 * kC; }

}  // namespace cla_layout
