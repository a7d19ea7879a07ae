#pragma once
// paged_attention_decode — the fragment layout of the expert's tensor-core form (the default and
// mma_prefetch; expert.cu): which K, V and q chunks lane (r = lane / 4, j = lane % 4) of a warp
// loads for one 16-token page, how their words become mma.sync m16n8k16 fragments, and where the
// lane's scores and accumulators sit. Plain C++ for host and device, so that expert.cu and the
// lane-level CPU emulation of the fragments (tests/unit/tasks/paged_attention_decode) use one
// layout. A chunk is 8 bf16 (16 bytes, 4 words); word w holds elements 2w (low half) and 2w + 1.
//
// S^T = Q . K^T: A = q (rows: head r, 4 of 16 used), B = K^T (columns: tokens); the contraction
// over d may take d in any order, so k-step (i, hf) uses words 2hf, 2hf + 1 of chunk 4i + j of q
// and of K as (a0, a2) and (b0, b1). O^T = V^T . P^T: A = V^T (rows: d, placed so that a lane's
// rows are its chunks), B = P^T, which is S^T's C fragment as it stands.
#include <cstdint>

#if defined(__CUDACC__)
#define PAGED_HD __host__ __device__ __forceinline__
#else
#define PAGED_HD inline
#endif

namespace paged_mma {

/// K rows lane `lane` loads: token k_token(lane, nt) (n-tile nt = 0, 1), chunk k_chunk(lane, i)
/// (i = 0..3); its q chunks are the same k_chunk of head lane / 4.
constexpr PAGED_HD int k_token(int lane, int nt) { return nt * 8 + lane / 4; }
constexpr PAGED_HD int k_chunk(int lane, int i) { return 4 * i + lane % 4; }
/// V rows: token v_token(lane, u) (u = 0..3: 2j, 2j + 1, 2j + 8, 2j + 9), chunk v_chunk(lane, h).
constexpr PAGED_HD int v_token(int lane, int u) { return 2 * (lane % 4) + (u & 1) + 8 * (u >> 1); }
constexpr PAGED_HD int v_chunk(int lane, int h) { return lane / 4 + 8 * h; }
/// Score c (0, 1) of n-tile nt in the lane's C fragment of S^T: head lane / 4, this token.
constexpr PAGED_HD int s_token(int lane, int nt, int c) { return nt * 8 + 2 * (lane % 4) + c; }
/// Accumulator c (0..3) of m-tile e in the lane's C fragment of O^T: this head and this d.
constexpr PAGED_HD int o_head(int lane, int c) { return 2 * (lane % 4) + c % 2; }
constexpr PAGED_HD int o_dim(int lane, int c, int e) { return 64 * (c / 2) + 8 * (lane / 4) + e; }

template <class V>
PAGED_HD std::uint32_t word(const V& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

/// Element `odd` (0, 1) of the bf16 pair x beside the same element of y: x's in the low half. On
/// the device one byte permute (PRMT; bytes 0-3 are x's, 4-7 y's), the host spells it out.
PAGED_HD std::uint32_t pair_elems(std::uint32_t x, std::uint32_t y, int odd) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, odd ? 0x7632u : 0x5410u);
#else
  return odd ? (x >> 16) | (y & 0xFFFF0000u) : (x & 0xFFFFu) | (y << 16);
#endif
}

/// The A fragment (a0..a3) of V^T for m-tile e (rows d 8r + e and 64 + 8r + e; k: tokens 2j,
/// 2j + 1 then 2j + 8, 2j + 9) from v[u][h], the chunk v_chunk(lane, h) of token v_token(lane, u).
template <class V>
PAGED_HD void v_frag(const V (&v)[4][2], int e, std::uint32_t (&a)[4]) {
  const int w = e / 2, odd = e & 1;
  a[0] = pair_elems(word(v[0][0], w), word(v[1][0], w), odd);
  a[1] = pair_elems(word(v[0][1], w), word(v[1][1], w), odd);
  a[2] = pair_elems(word(v[2][0], w), word(v[3][0], w), odd);
  a[3] = pair_elems(word(v[2][1], w), word(v[3][1], w), odd);
}

}  // namespace paged_mma
