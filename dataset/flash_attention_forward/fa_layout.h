// flash_attention_forward — the index maps of expert.cu's mma.sync kernel (step 1), in one place
// for the kernel and for the CPU test that replays ldmatrix and mma.sync on the host
// (tests/unit/tasks/flash_attention_forward: FragmentMaps).
//
// Shared-memory tiles are [rows][128] bf16, 16 chunks of 16 bytes per row, the chunk index XORed
// with the row's low 3 bits: the 8 rows an ldmatrix phase reads then hit 8 distinct 16-byte bank
// groups (a 256-byte row would otherwise put all of them in the same banks).
#pragma once

#if defined(__CUDACC__)
#define FA_HD __host__ __device__ __forceinline__
#else
#define FA_HD inline
#endif

namespace fa_layout {

constexpr int kD = 128;

/// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled [rows][128] tile.
FA_HD constexpr int swz(int row, int chunk) { return row * kD + ((chunk ^ (row & 7)) << 3); }

// The (row, chunk) whose address lane `lane` gives to ldmatrix.x4.
/// Q as the A operand of S = Q K^T: warp `warp`'s 16 rows, k-step kk (columns 16kk..16kk+15);
/// matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15) = a0..a3.
FA_HD constexpr int q_row(int warp, int lane) { return warp * 16 + lane % 16; }
FA_HD constexpr int q_chunk(int kk, int lane) { return 2 * kk + lane / 16; }
/// K as the col-major B operand (non-transposed ldmatrix of K rows): keys 16np..16np+15, k-step kk;
/// matrices (keys 0-7, k 0-7), (keys 0-7, k 8-15), (keys 8-15, k 0-7), (keys 8-15, k 8-15) =
/// b0, b1 of n-block 2np, then b0, b1 of n-block 2np+1.
FA_HD constexpr int k_row(int np, int lane) { return np * 16 + lane % 8 + (lane / 16) * 8; }
FA_HD constexpr int k_chunk(int kk, int lane) { return 2 * kk + (lane / 8) % 2; }
/// V as the B operand of O = P V (ldmatrix.trans of V rows): keys 16kk..16kk+15, columns
/// 16dp..16dp+15; matrices (keys 0-7, cols 0-7), (keys 8-15, cols 0-7), (keys 0-7, cols 8-15),
/// (keys 8-15, cols 8-15) = b0, b1 of n-block 2dp, then of 2dp+1.
FA_HD constexpr int v_row(int kk, int lane) { return kk * 16 + lane % 8 + ((lane / 8) % 2) * 8; }
FA_HD constexpr int v_chunk(int dp, int lane) { return 2 * dp + lane / 16; }

/// Element e (0..3) of an m16n8 fp32 accumulator: its row in the 16 and column in the 8.
FA_HD constexpr int acc_row(int lane, int e) { return lane / 4 + (e >= 2 ? 8 : 0); }
FA_HD constexpr int acc_col(int lane, int e) { return (lane % 4) * 2 + (e & 1); }

}  // namespace fa_layout
