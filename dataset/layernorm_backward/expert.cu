// layernorm_backward — expert: one pass over dy and x in a persistent grid whose CTAs each own a
// band of rows; dx written from registers; per-CTA column partials of dgamma and dbeta reduced by a
// small deterministic second kernel (no atomics).
//
//   xhat = (x - mean) * rstd;  g = gamma * dy;  a = sum_h g * xhat;  b = sum_h g
//   dx = bf16(rstd * (g - (b + xhat * a) / H));  dgamma = sum_t dy * xhat;  dbeta = sum_t dy
//
// Compulsory traffic is 6TH + 8T + 12H bytes (dy, x read once, dx written once). The row needs its
// sums a and b before dx, so every element is used twice: the row is held in registers between
// the two uses, never re-read from memory.
//   stage 1  ln_bwd_rows_vec: G CTAs (the resident count, about two per SM), CTA c owns rows
//            [c*B, (c+1)*B) (the default build, LNB_STRIDED, takes the same count of rows in
//            grid-wide rounds instead: one window of rows read at a time). A team of TW threads (32..256, the smallest whose 16-byte vectors,
//            at most kMaxVec per thread, span the row) takes one row per iteration: the thread
//            loads its vectors of dy and x with streaming 16-byte loads, forms xhat and g, reduces
//            (a, b) over the team (warp shuffles, then one shared-memory exchange across the team's
//            warps), writes dx with 16-byte stores. A thread owns the same columns in every row, so
//            its dgamma/dbeta partials for those columns accumulate in registers over the band;
//            at the end the CTA's teams are summed in shared memory in team order and the CTA
//            writes one partial row of dgamma and of dbeta (2 x 4H bytes, staying in L2).
//   stage 2  ln_bwd_reduce_partials: a thread per (column, slice) sums the G partials of its
//            column in a fixed order, a shared-memory tree over 8 slices: deterministic, run to
//            run and across GPUs with the same SM count.
// gamma (fp32) is staged in shared memory once per CTA. Rows with H % 8 != 0, H above
// 256 * kMaxVec * 8 = 8192, or tensors not 16-byte aligned take the generic path: a CTA per row
// re-reading the row from global (L1/L2) for dx, a column kernel writing band partials, the same
// stage 2.
//
// Designs considered:
//   a. aten's structure (a block per row for dx, a separate column-reduction kernel re-reading dy
//      and x for dgamma/dbeta): 10TH bytes plus fp32 casts around it in the mixed-dtype case.
//   b. one pass with global atomicAdd of the column partials: dgamma/dbeta that change in the last
//      bits from run to run and T*H/8 atomics per column set; rejected (issue #15 asks for a
//      deterministic second stage: reproducible parameter gradients).
//   c. (chosen) persistent bands with register-resident column partials: partials cost 8 B per
//      column per CTA (a few hundred CTAs: written and read back, 1-9% of the bytes, in L2), one
//      extra small launch.
//   d. a thread-block cluster reducing partials over DSMEM instead of stage 2: saves the launch
//      and the L2 round trip of the partials, at the cost of cluster scheduling; kept for later.
//
// Why the first H200 run (2026-12-01, docs/results/layernorm_backward.md) is at 72-78% of the
// 4.26 TB/s copy and not nearer it: stage 1 is short of bytes in flight. 64 of the 128 registers
// are the column partials, so a team holds one row (32 KB of dy + x per CTA, 24 KB at H = 6144)
// and issues the next row's loads only after this row's sums, barrier and dx stores: the loads
// are outstanding for part of each iteration only. The ranking fits: H = 6144 (24 KB per CTA) is
// the slowest row, H = 1024 (one warp per row: no barrier per row) the fastest. Smaller terms:
// evict-first loads and stores (.cs), which measured 4-8% slower than plain accesses on the H200
// in fused_add_rmsnorm's sweep (docs/results/fused_add_rmsnorm-variants.md); the partial rows
// (2 x 4H bytes per CTA: 2.2-16.8 MB at the bench shapes) written at stage 1's end and re-read by
// stage 2 after it, off the DRAM stream; static bands, which cannot hand rows from a slow SM to a
// fast one (dynamic scheduling would make dgamma's summation order depend on timing).
// Variants for the next run (the `%VARIANT%` lines below):
//   e. ring2/ring3/ring4/ring3_512 (chosen to attack the first cost): each thread cp.asyncs its
//      own vectors of its team's next S rows into an S-stage shared-memory ring and waits only for
//      the row it is about to use, so S - 1 rows per team stay in flight through the sums, barrier
//      and dx of the current one; registers hold the partials and one vector; a team of several
//      warps meets at its own named barrier; plain dx stores. Arithmetic, bands and partials as in
//      ln_bwd_rows_vec (bit-identical for the same CTA count and size). Shared memory per CTA
//      4H + S x 32 KB (24 KB at H = 6144) per 256 threads: ring3 keeps two CTAs per SM up to
//      H = 6144 (128 KB in flight per SM at H = 1024 and 4096) and one at H = 8192 (64 KB, half
//      the partial rows); ring2 two CTAs everywhere (64 KB); ring4 one CTA (72-96 KB, half the
//      partial rows); ring3_512 one CTA of 512 threads (twice the teams: 96-128 KB in flight, 16
//      warps, half the partial rows at every shape, up to 224 KB of shared memory at H = 8192).
//   f. plain_loads: the register kernel without the .cs hints (the second cost alone).
// Considered and not built: prefetching the next row into registers (64 more registers: one CTA
// of 8 warps per SM, 32 KB in flight); the partials in shared memory instead of registers (16 B of
// shared-memory traffic per element more than the ring); TMA bulk copies of whole rows with
// mbarriers (the same bytes in flight as the ring, and a producer warp); a cluster reduction of
// the partials over DSMEM (saves part of the partials' L2 round trip, the smaller cost).
// Measured on the H200 (2026-12-02, one call, docs/results/layernorm_backward.md "Variant sweep"):
// ring2 is faster than the register kernel on every bench row (1.06x / 1.07x / 1.01x / 1.15x) and
// is now the default (LNB_RING=2, plain dx stores); the register kernel is the variant
// `registers`. ring3_512 is faster at H = 4096, 8192, 6144 but 4% slower at H = 1024; ring4 is
// the fastest at H = 1024 only. None reaches 80% of SOL on every row (ring2: 75.3-80.7%).
// Why ring2 still takes 121 / 119 / 120 / 170 us against a SOL of about 91 / 91 / 91 / 137 us
// (diagnosis from its SASS and those numbers; no counters read):
//   - Issue, not bytes in flight. ring3 (twice the rows in flight) is no faster than ring2, and
//     every form with one team per SM (ring3/ring4 at H = 8192, ring4 at 6144) is the slowest:
//     the SM idles at the team's barrier. ring2's loop (static SASS of the taken path, 4 vectors
//     per thread) is 918 warp-instructions per row: pass 1 344 (86 per vector, of which 16 bf16
//     unpacks and 4 LDS.128), pass 2 319 (recomputing xhat, re-reading dy and x from the ring),
//     the prefetch 87 (64-bit address arithmetic), the team sums and stats 168. At 16384 x 4096
//     that is about 60M warp-instructions, 57 us of 4 schedulers x 132 SMs at 1.98 GHz, against
//     the 91 us SOL.
//     With 4 warps per scheduler and a barrier per row, that issue load is not hidden. Shared
//     memory: 5 KB of LDS/LDGSTS per warp-vector (40 us of the 128 B/clk pipe per SM).
//   - Rounds and tail. Stage 1 ends at its longest band: 65536 x 1024 has 249-row bands of 8
//     teams, so the 32nd round runs 1 team of 8 (16384 x 4096: 63 rows of 2 teams, 1 of 2), a
//     round of about 3.7 us at low bandwidth; then write_partials, and stage 2 (8 slices: 33
//     dependent L2 loads per thread and array at G = 264, in three batches) on the critical path.
// Variants for the next sweep (the `%VARIANT%` lines):
//   g. lean (LNB_LEAN): fewer instructions per element. xhat = fma(x, rstd, -mean*rstd) (one FMA
//      for two), dx = fma(rstd, g, -fma(x, k1, k0)) with per-row k1, k0 (no xhat recomputation),
//      the row read from the ring once and held in registers through the team sums (32 registers:
//      no second LDS), the next row's cp.async issued as soon as the slots are read (before the
//      math, not after the dx stores). 128 registers, no spills. The loop falls from 918 to 815
//      warp-instructions per row (fp32 ones from 404 to 311; the default, with the same running
//      addresses, 891). Another rounding (rule: fp32 in any order): tolerance tests emulate it.
//   h. lean_tail (whole-round bands, float4 stage 2): 0.98-1.02x ring2. Code removed; the results page has the design.
//   i. lean_512 (lean, a 512-thread CTA per SM): 0.91-0.99x the default. Code removed; the results page has the design.
//   j. lean_strided: lean + LNB_STRIDED (rows in grid-wide rounds, not bands): 792 sequential
//      streams (dy, x, dx of 264 bands, each 0.5-1.5 MB apart) become one sweeping window, for
//      DRAM page locality; the same rows per CTA, so the same rounds and tail as lean.
// Measured (2026-12-02, docs/results/layernorm_backward.md): lean_tail within noise of ring2 on
// three rows (0.984 / 0.997 / 0.996 of its time) and 1.9% slower at 6144: fewer instructions and
// no part-filled round did not move the time, so the row pass is not issue-bound. ring2 stays the
// default at 75.7 / 77.0 / 76.8 / 84.7% of SOL.
// Third round (what the numbers so far leave):
//   - The same kernel streams at two rates. ring2 moves 604 MB at 16384 x 6144 in 162.5 us and
//     403 MB at 8192 x 8192 (the same shape of work: one 256-thread team per CTA, two CTAs per SM)
//     in 118.6 us: 201 MB more for 43.9 us more, 4.6 TB/s at the margin, above the 4.41 TB/s the
//     SOL model allows this read/write mix. So either a fixed cost of about 30 us per call (none is
//     in sight: stage 2 and the partials are 2-5 us) or a shape that streams worse, independent of
//     bytes in flight (ring3, ring4 and ring3_512 did not help at 4096 and 8192) and of issue.
//   - Static bands. fused_add_rmsnorm's H200 sweep measured its persistent grid (resident CTAs
//     looping over rows) at 90.7% / 92.2% / 80.5% of SOL against 95.6% / 96.8% / 83% for a grid
//     of one row per CTA, whose CTAs the hardware hands to whichever SM is free: 4-5 points, what
//     ring2 misses by. Every form here is a persistent grid with equal static bands, so the call
//     ends when the slowest SM's band does. Not measured: the SMs' spread of finishing times.
//   k. dynamic (LNB_DYNAMIC, a diagnostic): ring2 with its rows taken from a global counter, one
//      atomicAdd per row and team two rows ahead of use (ln_bwd_rows_dyn): balanced to about a row
//      per team, at the cost of dgamma/dbeta no longer bit-reproducible (which rows a thread sums
//      depends on timing; correct to fp32 in any order). Not a default (issue #15 asks for
//      reproducible parameter gradients): it prices the static bands. If it reaches 80% where
//      ring2 does not, the deterministic form is the next step (static bands for most rows, the
//      last few percent in a dynamic tail whose column sums stage 2 takes in a fixed order, from
//      L2 where the last rows still are); if not, the bands are not the cost. Its teams take
//      consecutive rows at about the same time, so it also reads one window of rows, as
//      lean_strided does: a gain in both is the access pattern, in dynamic alone the balance.
//      A 4-byte cudaMemsetAsync of the counter before stage 1 is inside the timed call (about
//      1-2 us against it). 128 registers, no spills.
//   lean_strided and lean_512 (built, never timed) are in the same sweep: the access pattern
//   (one window) and one 512-thread CTA per SM on the lean kernel.
// Measured (third round, 2026-12-02, one call, docs/results/layernorm_backward.md): lean_strided
// 1.04x / 1.02x / 1.05x / 1.01x ring2 (78.5 / 78.6 / 80.4 / 85.2% of SOL), the fastest on three
// rows and within 1% of the best on the fourth: the one window helps, so lean_strided is the
// default since (LNB_LEAN=1, LNB_STRIDED=1; the former default is the knob set ring2). dynamic
// 1.06x / 1.05x on the two square-ish rows but 0.72x at 65536 x 1024 (a row per atomic is too
// fine there): balance adds 1.6-1.8 points over the window alone at 4096 and 8192 columns.
// Fourth round (dynamic's balance, deterministic: lean_strided's rounds, then the last rows in chunks from
// a counter, each chunk its own partial row, added by stage 2 in chunk order; one kernel); the ratios are
// to the default:
//   l. balanced (last T/32 rows in 1-row chunks): 0.75-0.92x. Code removed; the results page has the design.
//   l. balanced16 (last T/16 rows, 2-row chunks): 0.70-0.82x. Code removed; the results page has the design.
//   l. balanced_rem (rows past the last round, as chunks): 0.87-0.96x. Code removed; the results page has the design.
// Measured (2026-12-03, docs/results/layernorm_backward.md "Sixth session"): the kernel holding both loops
// spilled (48-56 B of stack reloaded every row); dynamic again 80.5 / 80.7% of SOL at 4096 / 8192 columns,
// the default 78.2 / 78.7 / 79.4 / 85.2%.
// Fifth round (that balance in two kernels, without the spills; the partials' L2 write-back), to the
// default:
//   m. ptail (last T/32 rows, a dependent grid): 0.87-0.96x. Code removed; the results page has the design.
//   m. ptail16 (ptail, last T/16 rows): 0.74-0.96x. Code removed; the results page has the design.
//   n. discard (stage 2 drops the partials' L2 lines): 0.99x. Code removed; the results page has the design.
// Measured (2026-12-03, seventh session, docs/results/layernorm_backward.md): the default 78.6 / 79.2 /
// 80.2 / 86.1% of SOL; dynamic (not reproducible) 1.02x at 4096 and 8192 columns: about 2.5 us of 115.
// Variants for the next run (sixth round: the end of the call; each result bit-identical to the
// default's, so dgamma and dbeta as reproducible as the default's by construction):
//   o. team_slices (LNB_TEAM_SLICES): write_partials of a CTA of several teams (H = 4096: 2 teams,
//      H = 1024: 8) as two phases around one barrier. The default sums the teams serially, a team
//      at a time behind a CTA barrier, each thread storing its 64 partials as scalars at a 32-byte
//      lane stride (eight-way bank conflicts), for dgamma and then dbeta: 4 + 2 barriers and about
//      6,500 cycles of the shared-memory pipe at 4096 columns (3.3 us at 1.98 GHz), 16 + 2 barriers
//      and about 8,500 cycles at 1024 (4.3 us), in every CTA once its rows are done, so on the
//      critical path after the last CTA's last row. The slices: each team stores its partials into
//      its own slice of the ring as float4s, consecutive lanes at consecutive 16 bytes (no
//      conflicts), then every thread adds the teams' float4s of its output columns in team order
//      and stores them coalesced: about 1,000-1,500 cycles. The same additions in the same order.
//      A one-team CTA (8192 and 6144 columns) stores its registers directly, as the default does:
//      those two rows are the control.
//   p. flags (LNB_FLAGS): stage 2 without griddepcontrol.wait. Each stage-1 CTA publishes its
//      partial rows with a release store of the call's epoch into its flag (cleared at its start,
//      before it lets stage 2 launch); stage 2 (ln_bwd_reduce_flagged) polls the flags with
//      acquire loads and loads each partial row as its flag shows up, holding the 33 rows of its
//      slice in registers (122 registers), then adds them in the default's order. Stage 2's CTAs
//      take the slots of the first stage-1 CTAs to finish; the wait for stage 1's completion and
//      memory flush and two of the default's three dependent L2 round trips (16 rows per trip)
//      leave the critical path: what follows the last CTA's flag is one poll, one load round trip,
//      the sums and the tree.
//   q. slices_flags: o and p together, the candidate default if both gain.
// Not built then: a cluster of two stage-1 CTAs summing their partial rows over DSMEM (built in the
// eighth round as s below); gamma staged by cp.async ahead of the first rows (its L2 round trips
// are hidden behind the first rows' DRAM latency, which all CTAs meet at once).
// Measured (tenth session, 2026-12-03): the default (team_slices) at 80.6 / 79.1 / 84.9 / 86.0% of
// SOL; 8192 x 8192 reads 115.78 us where 80% allows 114.5 us (1.3 us short). Its launch: 264 CTAs
// (the strided grid takes every resident slot) of one 256-thread team, two per SM, 4 vectors per
// thread, 96 KB of gamma and ring; 8192 rows are 31 rounds of 264 and 8 rows; 264 partial rows of
// 64 KB (17.3 MB written at stage 1's end, read once by stage 2: 33 rows per thread and array).
// Eighth round, aimed at that row (the others must not lose; each form deterministic, dx the
// default's bit for bit):
//   r. whole_rounds (LNB_WHOLE_ROUNDS): the strided grid has the fewest CTAs that keep its rounds,
//      G = ceil(T / (teams x rounds)): 256 at 8192 x 8192 (32 whole rounds), 256 at 16384 x 4096
//      and 65536 x 1024, 261 at 16384 x 6144. With 264, CTAs 0-7 take a 32nd row (16 and 64 rows
//      on 8 CTAs at 4096 and 1024 columns) after the other 256 have finished: its bytes are in
//      their rings by then (copied two rows ahead), what is left is its arithmetic, about 8 warps x
//      815 warp-instructions over 4 schedulers (1,630 issue cycles) plus the team barrier and the
//      dx stores, about 1 us at 1.98 GHz, then their partial rows. 8 SMs hold one CTA instead of
//      two: the DRAM stream, not the slots, sets the rate (ring3_512, twice the bytes in flight
//      per SM, was no faster at 8192 columns on 2026-12-02). 3% fewer partial rows. Expected up to
//      about 1 us (0.9%) alone: the control of t, and a part-filled round less at 4096 and 1024.
//   s. cluster_pairs (LNB_CLUSTER_PAIRS): one-team grids (H > 4096: 8192 and 6144 columns) are
//      launched as clusters of two (G from cudaOccupancyMaxActiveClusters: 264 on the H200 if
//      every GPC pairs its slots); the pair's partial rows become one (pair_partials: each CTA
//      st.asyncs the half of its partials the other sums into the other's ring, 32 KB at 8192
//      columns, counted by an mbarrier; relaxed cluster barriers, so no MEMBAR waits for the last
//      dx stores). 132 partial rows instead of 264 at 8192 columns: 8.65 MB written to L2 and read
//      by stage 2 instead of 17.3 MB, 17 rows per stage-2 thread instead of 33. Why the partial
//      rows: at equal bytes (402.8 MB) the default's worker medians were 104.96 / 112.02 / 115.78 us
//      at 65536 x 1024 / 16384 x 4096 / 8192 x 8192 (tenth session) with 2.2 / 8.65 / 17.3 MB of partial
//      rows: 3.76 us more for 8.65 MB more from 4096 to 8192 columns (the team's width, 4 then 8
//      warps at a named barrier, and stage 2's grid, 128 then 256 CTAs, change too). Not their
//      DRAM write-back (discard, 0.99x) nor stage 2's dependent round trips (lean_tail's one-trip
//      stage 2 was within noise): what is left is their L2 write burst after the last rows and
//      stage 2's reading, both halved. If the slope is the partial rows, up to 3.8 us (3.2%) at
//      8192 x 8192, less the exchange (64 KB in and out per SM, once, over the SM-to-SM network:
//      its rate is what the run measures); 16384 x 6144 (13.0 MB of partial rows) is the
//      second witness; 4096 and 1024 columns run the default's code (the control).
//   t. pairs_whole: r and s (256 CTAs, 128 pair rows at 8192 columns; 262 CTAs at 6144): the
//      candidate for the one row, if r and s each hold.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "d2k/solution.h"

// Build-time knobs, one per variant line. Left out of the sweep, whose time budget they would
// take (restore a line to time one): ring2 -DLNB_LEAN=0 -DLNB_STRIDED=0 (the default before the
// third round, 0.95-0.99x lean_strided then; its row pass is dynamic's), lean -DLNB_LEAN=1
// -DLNB_STRIDED=0 (lean_tail, its form with whole rounds and the one-trip stage 2, was timed within
// noise of ring2), occ1 -DLNB_MIN_BLOCKS=1 and no_pdl -DLNB_PDL=0 (attack none of the costs above);
// registers -DLNB_RING=0 -DLNB_STRIDED=0 -DLNB_STREAMING=1, plain_loads -DLNB_RING=0 -DLNB_STRIDED=0
// -DLNB_STREAMING=0, ring3 -DLNB_RING=3 and ring4 -DLNB_RING=4 (timed on 2026-12-02: slower than ring2
// on every row but ring4 at H = 1024).
//   ring3_512 (ring3, one 512-thread CTA per SM): 0.95-1.04x ring2. Code removed; the results page has the design.
// dynamic: the balance's price (not a default: timing-dependent dgamma order; variant k above).
//   %VARIANT% dynamic -DLNB_DYNAMIC=1 -DLNB_LEAN=0 -DLNB_STRIDED=0
// The sixth round (variants o, p, q above), timed on the H200 on 2026-12-03 (ninth session; the
// results page, "Round two measured"): team_slices 1.04 / 1.00 / 1.07 / 1.17x the form before on
// the four bench rows (never slower), the default since (LNB_TEAM_SLICES=1; its SASS identical to
// the timed variant's); flags on the form before 1.04 / 0.85 / 1.19 / 1.02x, slices_flags (now
// `flags`, on the new default) 1.09 / 0.86 / 1.10 / 1.03x: the ready flags win at H = 1024 and
// lose at H = 8192, a per-H choice left open. The form before is `shared_partials`.
//   %VARIANT% shared_partials -DLNB_TEAM_SLICES=0
//   %VARIANT% flags -DLNB_FLAGS=1
// The eighth round (variants r, s, t above; aimed at 8192 x 8192, the one bench row under 80%),
// timed on the H200 on 2026-12-03 (eleventh session, suite-eleven-2026-12-03.md): whole_rounds
// 0.99 / 1.00 / 1.03 / 1.00x the default on the four bench rows (a tie), cluster_pairs 0.93 / 0.94
// / 0.94 / 0.92x and pairs_whole 0.92 / 0.94 / 0.96 / 0.93x (the cluster barrier and the DSMEM
// stores cost more than the pass over the partials they save); the default read 79.6% and 80.4%
// of SOL on 8192 x 8192 in two runs of that call. Retired from the sweep (their flags still build
// them: -DLNB_WHOLE_ROUNDS=1, -DLNB_CLUSTER_PAIRS=1, both).
// LNB_MIN_BLOCKS: the __launch_bounds__ minimum CTAs per SM of stage 1 (2 caps registers at 128,
//   keeping 16 warps per SM to hide DRAM latency; 1 gives the compiler 255 and halves residency).
// LNB_STREAMING: evict-first loads and stores (ld.global.cs / st.global.cs) for the single-use
//   dy, x and dx, so that L2 keeps the partials and gamma; 0 uses plain accesses.
// LNB_PDL: stage 2 is launched as a programmatic dependent launch (sm_90): stage 1's CTAs signal
//   griddepcontrol.launch_dependents as they start, so stage 2 is launched while stage 1 runs and
//   its CTAs wait in griddepcontrol.wait for stage 1's completion and memory flush; the launch
//   gap between the two kernels (a few us, 2-5% of a bench workload) leaves the critical path.
// LNB_RING: 0 holds each row in registers (ln_bwd_rows_vec); S = 2..4 prefetches each team's next
//   rows with cp.async into an S-stage shared-memory ring (ln_bwd_rows_ring): S - 1 rows per team
//   in flight while one is worked on. With LNB_RING, LNB_STREAMING applies to the dx stores only.
// LNB_LEAN: the ring kernel's instruction diet (variant g above); with LNB_RING=0 the arithmetic only.
// LNB_DYNAMIC: ring2 (LNB_RING=2, not lean or strided) with each team's rows taken from a global
//   counter in the workspace (ln_bwd_rows_dyn) instead of a static band; dgamma/dbeta not
//   bit-reproducible (variant k).
// LNB_TEAM_SLICES: write_partials of a CTA of several teams through per-team slices of the ring
//   (write_partials_slices: conflict-free stores, one barrier, team-ordered float4 sums; variant o).
// LNB_FLAGS: stage 2 reads each partial row once its CTA's ready flag shows the call's epoch
//   (publish_partials, ln_bwd_reduce_flagged) instead of after griddepcontrol.wait (variant p).
// LNB_STRIDED: the ring kernel's CTA c takes rows (it * G + c) * teams + team instead of a band
//   (G = the resident CTAs): at any time the grid reads one window of G x teams x stages rows,
//   not 3 G sequential streams spread over the tensors. Still a fixed row set per CTA and team.
// LNB_WHOLE_ROUNDS: the strided grid has the fewest CTAs that keep its number of rounds, G =
//   ceil(T / (teams x rounds)), so that no round is left to a few CTAs while the others have
//   finished (variant r: 256 CTAs instead of 264 at 8192 x 8192).
// LNB_CLUSTER_PAIRS: a grid of one-team CTAs (H > 4096) is launched in clusters of two whose
//   partial rows are summed over distributed shared memory into one partial row per pair
//   (pair_partials): half the partial rows written to L2 and read by stage 2 (variant s).
#ifndef LNB_PDL
#define LNB_PDL 1
#endif
#ifndef LNB_MIN_BLOCKS
#define LNB_MIN_BLOCKS 2
#endif
#ifndef LNB_STREAMING
#define LNB_STREAMING 0
#endif
#ifndef LNB_RING
#define LNB_RING 2
#endif
#ifndef LNB_LEAN
#define LNB_LEAN 1
#endif
#ifndef LNB_STRIDED
#define LNB_STRIDED 1
#endif
#ifndef LNB_DYNAMIC
#define LNB_DYNAMIC 0
#endif
#ifndef LNB_TEAM_SLICES
#define LNB_TEAM_SLICES 1
#endif
#ifndef LNB_FLAGS
#define LNB_FLAGS 0
#endif
#ifndef LNB_WHOLE_ROUNDS
#define LNB_WHOLE_ROUNDS 0
#endif
#ifndef LNB_CLUSTER_PAIRS
#define LNB_CLUSTER_PAIRS 0
#endif
static_assert(!(LNB_STRIDED && !LNB_RING), "LNB_STRIDED: the ring kernel's row order");
static_assert(!(LNB_TEAM_SLICES && LNB_RING < 2), "LNB_TEAM_SLICES: the ring (two stages or more) holds the slices");
static_assert(!LNB_FLAGS || (LNB_RING && !LNB_DYNAMIC), "LNB_FLAGS: the ring kernel's partial rows");
static_assert(!LNB_WHOLE_ROUNDS || LNB_STRIDED, "LNB_WHOLE_ROUNDS: the strided grid's rounds");
static_assert(!LNB_CLUSTER_PAIRS || (LNB_STRIDED && !LNB_FLAGS), "LNB_CLUSTER_PAIRS: the strided ring kernel, stage 2 after griddepcontrol.wait");

namespace lnb {

constexpr int kThreads = 256;                   ///< the widest team; threads per CTA of the fallback
constexpr int kWarps = kThreads / 32;
constexpr int kCta = kThreads;                 ///< threads per CTA of stage 1 (one or more teams)
constexpr int kCtaWarps = kCta / 32;
constexpr int kMaxVec = 4;                      ///< 16-byte vectors per thread per tensor (8 bf16 each)
constexpr int64_t kMaxVecH = int64_t{kThreads} * kMaxVec * 8;  ///< longest row of the vector path
constexpr int64_t kMaxParts = 1024;             ///< most partial rows (CTAs of stage 1)
constexpr int kFallbackParts = 256;             ///< row bands of the generic column kernel
constexpr int kReduceCols = 32;                 ///< stage 2: columns per CTA
constexpr int kReduceSlices = 8;                ///< stage 2: partial slices per column

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
#if LNB_STREAMING
  return __ldcs(p);
#else
  return *p;
#endif
}
__device__ __forceinline__ void store_stream(uint4* p, uint4 v) {
#if LNB_STREAMING
  __stcs(p, v);
#else
  *p = v;
#endif
}

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
/// Element j (0..7) of a 16-byte vector of bf16.
__device__ __forceinline__ float bf16_at(const uint4& v, int j) {
  const uint32_t w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
  return (j & 1) ? bf16_hi(w) : bf16_lo(w);
}

/// PDL: stage 1 lets the dependent grid (stage 2) launch; stage 2 waits for the primary grid's
/// completion and memory flush. Both are no-ops for a kernel launched without the PDL attribute.
__device__ __forceinline__ void pdl_launch_dependents() {
#if LNB_PDL
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait_primary() {
#if LNB_PDL
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Where stage 1 runs: row bands and team shape, the same in workspace sizing and launch.
struct Plan {
  int team_width;        ///< threads per row (32..256)
  int64_t rows_per_cta;  ///< B
  int64_t ctas;          ///< G = number of partial rows
};

/// The eight gamma values of vector v (shared memory, float4-aligned).
struct Gamma8 {
  float g[8];
  __device__ __forceinline__ explicit Gamma8(const float* s_gamma, int v) {
    const float4 g0 = reinterpret_cast<const float4*>(s_gamma)[2 * v];
    const float4 g1 = reinterpret_cast<const float4*>(s_gamma)[2 * v + 1];
    g[0] = g0.x, g[1] = g0.y, g[2] = g0.z, g[3] = g0.w, g[4] = g1.x, g[5] = g1.y, g[6] = g1.z, g[7] = g1.w;
  }
};

/// A row's saved statistics and what both uses of its vectors derive from them. With LNB_LEAN,
/// xhat = x * rstd + nmr (one FMA; nmr = -(mean * rstd) rounded once per row) instead of
/// (x - mean) * rstd (two operations): the rounding of nmr is at most 2^-24 |mean * rstd|, far
/// inside the rule's fp32 latitude even for shifted rows (mean 8, rstd 0.5: 2.4e-7).
struct RowStats {
  float mu, rs, nmr;
  __device__ __forceinline__ RowStats(float mean, float rstd) : mu(mean), rs(rstd), nmr(-(mean * rstd)) {}
  __device__ __forceinline__ float xhat(float xv) const {
#if LNB_LEAN
    return fmaf(xv, rs, nmr);
#else
    return (xv - mu) * rs;
#endif
  }
};

/// The per-row coefficients of dx = rstd * g - (xhat * ca + cb), ca = rstd * a / H, cb = rstd * b / H.
/// With LNB_LEAN, xhat * ca + cb is folded into x * k1 + k0 (k1 = rstd * ca, k0 = nmr * ca + cb):
/// one FMA per element instead of the xhat recomputation and its FMA.
struct DxCoef {
  float ca, cb, k1, k0;
  __device__ __forceinline__ DxCoef(const RowStats& st, float a, float b, float inv_h)
      : ca(st.rs * a * inv_h), cb(st.rs * b * inv_h), k1(st.rs * ca), k0(fmaf(st.nmr, ca, cb)) {}
};

/// First use of a vector of the row: its terms of the row sums (a, b) and of the thread's column
/// partials. Both stage-1 kernels call it, so their arithmetic and order are the same.
__device__ __forceinline__ void accumulate_vec(const uint4& vdy, const uint4& vx, const Gamma8& gam, const RowStats& st,
                                               float& a, float& b, float (&acc_g)[8], float (&acc_b)[8]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float d = bf16_at(vdy, j);
    const float xh = st.xhat(bf16_at(vx, j));
    const float g = gam.g[j] * d;
    a = fmaf(g, xh, a);
    b += g;
    acc_g[j] = fmaf(d, xh, acc_g[j]);
    acc_b[j] += d;
  }
}

/// Second use of a vector: its eight dx, packed to bf16.
__device__ __forceinline__ uint4 dx_vec(const uint4& vdy, const uint4& vx, const Gamma8& gam, const RowStats& st,
                                        const DxCoef& c) {
  float o[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#if LNB_LEAN
    o[j] = fmaf(st.rs, gam.g[j] * bf16_at(vdy, j), -fmaf(bf16_at(vx, j), c.k1, c.k0));
#else
    const float xh = st.xhat(bf16_at(vx, j));
    o[j] = fmaf(st.rs, gam.g[j] * bf16_at(vdy, j), -fmaf(xh, c.ca, c.cb));
#endif
  }
  return make_uint4(pack_bf16x2(o[0], o[1]), pack_bf16x2(o[2], o[3]), pack_bf16x2(o[4], o[5]),
                    pack_bf16x2(o[6], o[7]));
}

/// (a, b) of the team's row: warp butterflies, then (teams of several warps) the team's warps in
/// order through red[it & 1]. Every thread of the CTA must call it (a barrier when warps_per_team > 1):
/// the CTA's barrier, or with kTeamBarrier the team's own named barrier (bar.sync 1 + team, one per
/// team: only the team reads its warps' entries), so that a team waits for its own warps only.
template <bool kTeamBarrier = false>
__device__ __forceinline__ void team_sums(float& a, float& b, float2 (&red)[2][kCtaWarps], int64_t it, int team,
                                          int warps_per_team) {
  a = warp_sum(a);
  b = warp_sum(b);
  if (warps_per_team > 1) {  // uniform over the CTA
    float2* buf = red[it & 1];
    if ((threadIdx.x & 31) == 0) buf[threadIdx.x / 32] = make_float2(a, b);
    if (kTeamBarrier)
      asm volatile("bar.sync %0, %1;" ::"r"(1 + team), "r"(warps_per_team * 32) : "memory");
    else
      __syncthreads();
    a = b = 0.f;
    for (int w = team * warps_per_team; w < (team + 1) * warps_per_team; ++w) {
      a += buf[w].x;
      b += buf[w].y;
    }
  }
}

#if LNB_TEAM_SLICES
/// write_partials of a CTA of several teams in two phases and one barrier (LNB_TEAM_SLICES): each
/// team stores its column partials into its own slice of shared memory, a float4 per (array,
/// vector, half, lane) with consecutive lanes at consecutive 16 bytes (no bank conflicts); then
/// every thread of the CTA forms float4s of the partial rows by adding the teams' slices in team
/// order, t0 + t1 + ... (the same fp32 additions in the same order as the serial form below, so
/// the same bits), and stores them with coalesced 16-byte stores. The serial form takes 2 x teams
/// barriers, each team storing its 64 values as scalars at a 32-byte lane stride (eight-way bank
/// conflicts, behind a barrier per team): about 6-11 thousand cycles at the end of every CTA at
/// H = 4096 and 1024 (2 and 8 teams), on the call's critical path.
/// Shared memory: teams x 2 x vpt x 2 x team_width float4 = 64 x vpt x kCta bytes, the two-stage
/// ring's size exactly (the ring kernel's callers only; the ring is free when it is called).
__device__ __forceinline__ void write_partials_slices(const float (&acc_g)[kMaxVec][8], const float (&acc_b)[kMaxVec][8],
                                                      float4* s_slices, float* __restrict__ pg,
                                                      float* __restrict__ pb, int H, int team_width) {
  const int nvec = H / 8;
  const int vpt = (nvec + team_width - 1) / team_width;
  const int teams = kCta / team_width;
  const int team = threadIdx.x / team_width, tl = threadIdx.x % team_width;
  // Slice entry of (team, array q, vector k, half hf, lane tl).
  auto at = [&](int t, int q, int k, int hf, int lane) { return (((t * 2 + q) * vpt + k) * 2 + hf) * team_width + lane; };
  // Phase 1: the team's own slice.
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    if (k >= vpt || tl + k * team_width >= nvec) continue;
    s_slices[at(team, 0, k, 0, tl)] = make_float4(acc_g[k][0], acc_g[k][1], acc_g[k][2], acc_g[k][3]);
    s_slices[at(team, 0, k, 1, tl)] = make_float4(acc_g[k][4], acc_g[k][5], acc_g[k][6], acc_g[k][7]);
    s_slices[at(team, 1, k, 0, tl)] = make_float4(acc_b[k][0], acc_b[k][1], acc_b[k][2], acc_b[k][3]);
    s_slices[at(team, 1, k, 1, tl)] = make_float4(acc_b[k][4], acc_b[k][5], acc_b[k][6], acc_b[k][7]);
  }
  __syncthreads();
  // Phase 2: float4 i of array q is vector v = i / 2, half i % 2, owned by lane v % team_width at k = v / team_width.
  const int quads = H / 4;
  for (int o = threadIdx.x; o < 2 * quads; o += kCta) {
    const int q = o >= quads, i = o - q * quads;
    const int v = i / 2, hf = i % 2, k = v / team_width, lane = v % team_width;
    float4 sum = s_slices[at(0, q, k, hf, lane)];
    for (int t = 1; t < teams; ++t) {
      const float4 add = s_slices[at(t, q, k, hf, lane)];
      sum.x += add.x, sum.y += add.y, sum.z += add.z, sum.w += add.w;
    }
    reinterpret_cast<float4*>(q == 0 ? pg : pb)[i] = sum;
  }
}
#endif

/// The CTA's partial rows of dgamma and dbeta: teams summed in team order through s_sum (H floats
/// of shared memory, used only when the CTA has several teams; deterministic). kTeamSlices (the
/// ring kernel with LNB_TEAM_SLICES): the same sums through write_partials_slices, s_sum the ring.
template <bool kTeamSlices = false>
__device__ __forceinline__ void write_partials(const float (&acc_g)[kMaxVec][8], const float (&acc_b)[kMaxVec][8],
                                               float* s_sum, float* __restrict__ part_g, float* __restrict__ part_b,
                                               int H, int team_width) {
  const int nvec = H / 8;
  const int teams = kCta / team_width;
  const int team = threadIdx.x / team_width, tl = threadIdx.x % team_width;
  float* pg = part_g + static_cast<int64_t>(blockIdx.x) * H;
  float* pb = part_b + static_cast<int64_t>(blockIdx.x) * H;
  if (teams == 1) {
#pragma unroll
    for (int k = 0; k < kMaxVec; ++k) {
      const int v = tl + k * team_width;
      if (v >= nvec) continue;
      reinterpret_cast<float4*>(pg)[2 * v] = make_float4(acc_g[k][0], acc_g[k][1], acc_g[k][2], acc_g[k][3]);
      reinterpret_cast<float4*>(pg)[2 * v + 1] = make_float4(acc_g[k][4], acc_g[k][5], acc_g[k][6], acc_g[k][7]);
      reinterpret_cast<float4*>(pb)[2 * v] = make_float4(acc_b[k][0], acc_b[k][1], acc_b[k][2], acc_b[k][3]);
      reinterpret_cast<float4*>(pb)[2 * v + 1] = make_float4(acc_b[k][4], acc_b[k][5], acc_b[k][6], acc_b[k][7]);
    }
    return;
  }
#if LNB_TEAM_SLICES
  if constexpr (kTeamSlices) {
    write_partials_slices(acc_g, acc_b, reinterpret_cast<float4*>(s_sum), pg, pb, H, team_width);
  } else
#endif
  for (int q = 0; q < 2; ++q) {
    for (int t = 0; t < teams; ++t) {
      if (team == t) {
#pragma unroll
        for (int k = 0; k < kMaxVec; ++k) {
          const int v = tl + k * team_width;
          if (v >= nvec) continue;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float add = q == 0 ? acc_g[k][j] : acc_b[k][j];
            s_sum[v * 8 + j] = t == 0 ? add : s_sum[v * 8 + j] + add;
          }
        }
      }
      __syncthreads();
    }
    float* dst = q == 0 ? pg : pb;
    for (int i = threadIdx.x; i < H; i += kCta) dst[i] = s_sum[i];
    __syncthreads();  // s_sum is rewritten for dbeta
  }
}

/// Stage 1 (vector path, the row held in registers). See the file comment.
__global__ void __launch_bounds__(kCta, LNB_MIN_BLOCKS)
    ln_bwd_rows_vec(const uint4* __restrict__ dy, const uint4* __restrict__ x, const float* __restrict__ mean,
                    const float* __restrict__ rstd, const float* __restrict__ gamma, uint4* __restrict__ dx,
                    float* __restrict__ part_g, float* __restrict__ part_b, int64_t T, int H, int team_width,
                    int64_t rows_per_cta) {
  extern __shared__ float4 smem_v[];  // gamma[H], then (when the CTA has several teams) sum[H];
  float* smem = reinterpret_cast<float*>(smem_v);  // float4: 16-byte aligned for the vector reads
  __shared__ float2 red[2][kCtaWarps];  // (a, b) per warp, double-buffered across iterations
  float* s_gamma = smem;
  const int nvec = H / 8;
  const int teams = kCta / team_width;
  const int team = threadIdx.x / team_width, tl = threadIdx.x % team_width;
  const int warps_per_team = team_width / 32;
  const float inv_h = 1.0f / static_cast<float>(H);
  pdl_launch_dependents();  // stage 2 may launch now; it waits for this grid's completion

  for (int i = threadIdx.x; i < H; i += kCta) s_gamma[i] = gamma[i];
  __syncthreads();

  float acc_g[kMaxVec][8], acc_b[kMaxVec][8];
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc_g[k][j] = acc_b[k][j] = 0.f;

  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * rows_per_cta;
  const int64_t row_end = min(T, row0 + rows_per_cta);
  const int64_t iters = row_end > row0 ? (row_end - row0 + teams - 1) / teams : 0;
  for (int64_t it = 0; it < iters; ++it) {
    const int64_t row = row0 + it * teams + team;
    const bool active = row < row_end;  // uniform within a team; every thread reaches the barrier
    uint4 vdy[kMaxVec], vx[kMaxVec];
    float mu = 0.f, rs = 0.f;
    if (active) {
      mu = mean[row];
      rs = rstd[row];
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        const int v = tl + k * team_width;
        if (v < nvec) {
          vdy[k] = load_stream(dy + row * nvec + v);
          vx[k] = load_stream(x + row * nvec + v);
        }
      }
    }
    // Row sums and the register-resident column partials.
    float a = 0.f, b = 0.f;
    if (active) {
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        const int v = tl + k * team_width;
        if (v < nvec) accumulate_vec(vdy[k], vx[k], Gamma8(s_gamma, v), RowStats(mu, rs), a, b, acc_g[k], acc_b[k]);
      }
    }
    team_sums(a, b, red, it, team, warps_per_team);
    if (!active) continue;
    const RowStats st(mu, rs);
    const DxCoef c(st, a, b, inv_h);
#pragma unroll
    for (int k = 0; k < kMaxVec; ++k) {
      const int v = tl + k * team_width;
      if (v < nvec) store_stream(dx + row * nvec + v, dx_vec(vdy[k], vx[k], Gamma8(s_gamma, v), st, c));
    }
  }
  write_partials(acc_g, acc_b, smem + H, part_g, part_b, H, team_width);
}

#if LNB_RING
constexpr int kStages = LNB_RING;  ///< rows of each team in the shared-memory ring
static_assert(kStages >= 2 && kStages <= 4, "LNB_RING: 2 to 4 stages");
static_assert(kCta / 64 < 16, "a named barrier per team of several warps: ids 1..15");

/// cp.async: a thread's own 16-byte (L2 only, .cg) or 4-byte copy from global to shared memory.
/// The issuing thread sees the bytes after its cp.async.wait_group; no other thread reads them.
__device__ __forceinline__ void cp_async16(unsigned s, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(gmem) : "memory");
}
/// One 16-byte shared-memory load (LDS.128): a uint4 read through a reference is otherwise split
/// into the 32-bit words the arithmetic uses.
__device__ __forceinline__ uint4 lds128(unsigned s) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(s));
  return v;
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/// Wait until at most N of this thread's committed groups are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

#if LNB_CLUSTER_PAIRS
/// This CTA's rank in its cluster of two, and a shared-memory address of this CTA mapped to the
/// same offset in the shared memory of the CTA of rank r (a shared::cluster address).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned map_to_rank(unsigned s, unsigned r) {
  unsigned d;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(s), "r"(r));
  return d;
}
/// Both CTAs of the cluster reach it before either passes. Relaxed arrive: it orders no memory
/// access of its own (a release arrive compiles to MEMBAR.ALL.GPU, which would wait for this CTA's
/// last dx stores to reach L2); the wait's acquire publishes the mbarrier's initialisation
/// (fence.mbarrier_init before it).
__device__ __forceinline__ void cluster_barrier_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
/// The mbarrier that counts the bytes the other CTA stores into this one: one arrival (thread 0's
/// expect_tx) and the bytes of the st.async below complete its phase 0.
__device__ __forceinline__ void pair_mbar_init(unsigned mbar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n\tfence.mbarrier_init.release.cluster;" ::"r"(mbar) : "memory");
}
/// 16 bytes into the other CTA's shared memory; their arrival counted by its mbarrier.
__device__ __forceinline__ void st_async4(unsigned dst, float a, float b, float c, float d, unsigned mbar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
               ::"r"(dst), "f"(a), "f"(b), "f"(c), "f"(d), "r"(mbar) : "memory");
}

/// LNB_CLUSTER_PAIRS: the partial rows of a cluster of two one-team CTAs (CTAs 2k and 2k + 1 of
/// the strided grid) as one partial row k, p_2k + p_2k+1 in fp32 (one addition: the same bits
/// whichever CTA adds it). Rank 0 forms the dgamma row, rank 1 the dbeta row. Once both CTAs are
/// done with their rings (a relaxed cluster barrier), each thread stores the half of its partials
/// that the other CTA sums into the other CTA's ring (st.async, 16 bytes each, at the slots of the
/// same thread there), the other CTA's mbarrier counting the bytes; each CTA waits for the 4H
/// bytes it receives, adds them to its registers and stores its row to L2 with the default's
/// 16-byte stores. No global store is fenced: the last row's dx stores drain as in the default.
/// A second relaxed barrier keeps each CTA resident until the other has received its bytes.
/// 4H bytes <= the ring's 64 x vpt x kCta bytes for one team per CTA (H <= 8 x vpt x kCta).
__device__ __forceinline__ void pair_partials(const float (&acc_g)[kMaxVec][8], const float (&acc_b)[kMaxVec][8],
                                              float4* s_rows, unsigned mbar, float* __restrict__ part_g,
                                              float* __restrict__ part_b, int H) {
  const int nvec = H / 8;
  const unsigned r = cluster_rank();  // 0: sums dgamma, 1: sums dbeta
  const unsigned mine = static_cast<unsigned>(__cvta_generic_to_shared(s_rows + 2 * threadIdx.x));
  cluster_barrier_relaxed();  // the other CTA's ring is free, its mbarrier initialised
  const unsigned peer = map_to_rank(mine, r ^ 1u), peer_mbar = map_to_rank(mbar, r ^ 1u);
  if (threadIdx.x == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(mbar), "r"(nvec * 32) : "memory");
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    if (static_cast<int>(threadIdx.x) + k * kCta >= nvec) continue;
    float o[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) o[j] = r == 0 ? acc_b[k][j] : acc_g[k][j];  // what the other CTA sums
    const unsigned at = peer + static_cast<unsigned>(k * kCta * 2 * sizeof(float4));
    st_async4(at, o[0], o[1], o[2], o[3], peer_mbar);
    st_async4(at + sizeof(float4), o[4], o[5], o[6], o[7], peer_mbar);
  }
  asm volatile(
      "{\n\t.reg .pred p;\n"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], 0;\n\t"
      "@!p bra WAIT_%=;\n\t}" ::"r"(mbar) : "memory");
  float* dst = (r == 0 ? part_g : part_b) + static_cast<int64_t>(blockIdx.x / 2) * H;
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k) {
    const int v = threadIdx.x + k * kCta;
    if (v >= nvec) continue;
    float m[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) m[j] = r == 0 ? acc_g[k][j] : acc_b[k][j];
    const float4 lo = s_rows[2 * v], hi = s_rows[2 * v + 1];  // the other CTA's, from st.async
    reinterpret_cast<float4*>(dst)[2 * v] = make_float4(m[0] + lo.x, m[1] + lo.y, m[2] + lo.z, m[3] + lo.w);
    reinterpret_cast<float4*>(dst)[2 * v + 1] = make_float4(m[4] + hi.x, m[5] + hi.y, m[6] + hi.z, m[7] + hi.w);
  }
  cluster_barrier_relaxed();
}
#endif

#if LNB_FLAGS
/// LNB_FLAGS, stage 1's side: this CTA's partial rows are in L2 for stage 2. Every thread fences
/// its own stores of write_partials (fence.sc at GPU scope), the barrier orders them before thread
/// 0's release store of the call's epoch into the CTA's flag; stage 2 reads the flag with an
/// acquire load before it loads the rows. The flag was set to 0 by this CTA at its start, before
/// any thread of the CTA let stage 2 launch (griddepcontrol.launch_dependents after a barrier), so
/// a flag left equal to this call's epoch by another call (another build loaded with its own epoch
/// count) is gone before stage 2 can read it; the epoch, which changes every call, tells this
/// call's flags from the previous call's without a memset on the stream.
__device__ __forceinline__ void publish_partials(unsigned* flags, unsigned epoch) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flags + blockIdx.x), "r"(epoch) : "memory");
}
#endif

/// Shared memory of the ring kernel: gamma[H] | ring[kStages][2 tensors][vpt][kCta] uint4 |
/// stats[kStages][kCtaWarps] (mean, rstd). The team sums of write_partials reuse the ring.
size_t ring_smem_bytes(int64_t H, int vpt) {
  return static_cast<size_t>(H) * sizeof(float) + size_t{kStages} * 2 * vpt * kCta * sizeof(uint4) +
         size_t{kStages} * kCtaWarps * sizeof(float2);
}

/// Stage 1 (vector path, rows prefetched into shared memory). The same teams, bands, arithmetic
/// and partials as ln_bwd_rows_vec, but a thread copies its vectors of the next kStages rows with
/// cp.async into its own slots of a ring, so that kStages - 1 rows per team are in flight while
/// it works on one, and the registers hold only the column partials and the vector in use: the
/// bytes in flight per SM no longer depend on the registers left after the 64 accumulators. Teams
/// of several warps meet at their own named barrier, not the CTA's (team_sums<true>).
__global__ void __launch_bounds__(kCta, LNB_MIN_BLOCKS)
    ln_bwd_rows_ring(const uint4* __restrict__ dy, const uint4* __restrict__ x, const float* __restrict__ mean,
                     const float* __restrict__ rstd, const float* __restrict__ gamma, uint4* __restrict__ dx,
                     float* __restrict__ part_g, float* __restrict__ part_b, int64_t T, int H, int team_width,
                     int64_t rows_per_cta
#if LNB_FLAGS
                     , unsigned* __restrict__ flags, unsigned epoch
#endif
#if LNB_CLUSTER_PAIRS
                     , int pairs  // launched in clusters of two one-team CTAs: pair_partials
#endif
                     ) {
  extern __shared__ float4 smem_v[];
  __shared__ float2 red[2][kCtaWarps];
  const int nvec = H / 8;
  const int vpt = (nvec + team_width - 1) / team_width;  // vectors per thread per tensor (<= kMaxVec)
  float* s_gamma = reinterpret_cast<float*>(smem_v);
  uint4* ring = reinterpret_cast<uint4*>(s_gamma + H);  // H % 8 == 0: 16-byte aligned
  float2* stats = reinterpret_cast<float2*>(ring + kStages * 2 * vpt * kCta);
  const int teams = kCta / team_width;
  const int team = threadIdx.x / team_width, tl = threadIdx.x % team_width;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps_per_team = team_width / 32;
  const float inv_h = 1.0f / static_cast<float>(H);
  // Shared address of the slot of (stage s, tensor q: 0 dy, 1 x, vector k) for this thread:
  // consecutive threads, consecutive 16 B. 32-bit shared addresses with the vector's step a
  // compile-time offset, so that a slot costs no address arithmetic per vector.
  const unsigned my_ring = static_cast<unsigned>(__cvta_generic_to_shared(ring + threadIdx.x));
  const unsigned tensor_bytes = static_cast<unsigned>(vpt) * kCta * sizeof(uint4);
  auto slot = [&](int s, int q, int k) {
    return my_ring + static_cast<unsigned>(s * 2 + q) * tensor_bytes + static_cast<unsigned>(k * kCta * sizeof(uint4));
  };
#if LNB_CLUSTER_PAIRS
  __shared__ alignas(8) unsigned long long s_pair_mbar;
  const unsigned pair_mbar = static_cast<unsigned>(__cvta_generic_to_shared(&s_pair_mbar));
  if (pairs && threadIdx.x == 0) pair_mbar_init(pair_mbar);  // published by pair_partials' first barrier
#endif
#if LNB_FLAGS
  if (threadIdx.x == 0) {  // this call's flag cleared before stage 2 can launch (see publish_partials)
    flags[blockIdx.x] = 0u;
    __threadfence();
  }
#else
  pdl_launch_dependents();
#endif

  // Row indices in 32 bits (T <= 2^31 - 2^16, checked by d2k_run, so that a row a few rounds past
  // the end does not overflow; fewer registers beside the partials), element offsets in 64.
#if LNB_STRIDED
  // Round `it` of CTA c: rows (it * G + c) * teams + team; the grid sweeps one window of rows.
  const int row0 = static_cast<int>(blockIdx.x) * teams;
  const int rows_step = static_cast<int>(gridDim.x) * teams;
  const int row_end = static_cast<int>(T);
#else
  const int row0 = static_cast<int>(blockIdx.x * rows_per_cta);
  const int rows_step = teams;
  const int row_end = static_cast<int>(min(T, row0 + rows_per_cta));
#endif
  const int iters = row_end > row0 ? (row_end - row0 + rows_step - 1) / rows_step : 0;
  // One commit per call, empty past the band: the wait below counts groups.
  auto prefetch = [&](int it, int s) {
    const int row = row0 + it * rows_step + team;
    if (it < iters && row < row_end) {
      const int64_t first = static_cast<int64_t>(row) * nvec + tl;
      const uint4* src_dy = dy + first;
      const uint4* src_x = x + first;
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        if (tl + k * team_width < nvec) {
          cp_async16(slot(s, 0, k), src_dy);
          cp_async16(slot(s, 1, k), src_x);
        }
        src_dy += team_width;  // running pointers: one 64-bit add per vector and tensor
        src_x += team_width;
      }
      if (lane == 0) {  // one copy per warp, shared by shuffle
        cp_async4(&stats[s * kCtaWarps + warp].x, mean + row);
        cp_async4(&stats[s * kCtaWarps + warp].y, rstd + row);
      }
    }
    cp_async_commit();
  };
#pragma unroll
  for (int s = 0; s < kStages; ++s) prefetch(s, s);

  for (int i = threadIdx.x; i < H; i += kCta) s_gamma[i] = gamma[i];
  __syncthreads();
#if LNB_FLAGS
  pdl_launch_dependents();  // after the barrier: every thread of the CTA past the flag's clearing
#endif

  float acc_g[kMaxVec][8], acc_b[kMaxVec][8];
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc_g[k][j] = acc_b[k][j] = 0.f;

  int s = 0;  // it % kStages
  for (int it = 0; it < iters; ++it) {
    const int row = row0 + it * rows_step + team;
    const bool active = row < row_end;  // uniform within a team; every thread reaches the barrier
    cp_async_wait<kStages - 1>();       // this thread's group of row `it` has landed
    float2 st = make_float2(0.f, 0.f);
    if (active && lane == 0) st = stats[s * kCtaWarps + warp];
    const RowStats rst(__shfl_sync(0xffffffffu, st.x, 0), __shfl_sync(0xffffffffu, st.y, 0));
    float a = 0.f, b = 0.f;
#if LNB_LEAN
    // The row's vectors read from the ring once and held in registers through the team sums (32
    // registers beside the 64 partials): the second use reads no shared memory.
    uint4 vdy[kMaxVec], vx[kMaxVec];
#endif
#if LNB_LEAN
    if (active) {
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        if (tl + k * team_width < nvec) {
          vdy[k] = lds128(slot(s, 0, k));
          vx[k] = lds128(slot(s, 1, k));
        }
      }
    }
    prefetch(it + kStages, s);  // this thread's slots are free once read: the copy starts before the math
#endif
    if (active) {
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        const int v = tl + k * team_width;
        if (v < nvec) {
#if LNB_LEAN
          accumulate_vec(vdy[k], vx[k], Gamma8(s_gamma, v), rst, a, b, acc_g[k], acc_b[k]);
#else
          accumulate_vec(lds128(slot(s, 0, k)), lds128(slot(s, 1, k)), Gamma8(s_gamma, v), rst, a, b, acc_g[k],
                         acc_b[k]);
#endif
        }
      }
    }
    team_sums<true>(a, b, red, it, team, warps_per_team);
    if (active) {
      const DxCoef c(rst, a, b, inv_h);
      uint4* dst = dx + static_cast<int64_t>(row) * nvec + tl;
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        const int v = tl + k * team_width;
        if (v < nvec) {
#if LNB_LEAN
          store_stream(dst, dx_vec(vdy[k], vx[k], Gamma8(s_gamma, v), rst, c));
#else
          store_stream(dst, dx_vec(lds128(slot(s, 0, k)), lds128(slot(s, 1, k)), Gamma8(s_gamma, v), rst, c));
#endif
        }
        dst += team_width;
      }
    }
#if !LNB_LEAN
    prefetch(it + kStages, s);  // into the slots just read (this thread's own)
#endif
    s = s + 1 == kStages ? 0 : s + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // every thread done with the ring: write_partials reuses it for the team sums
#if LNB_CLUSTER_PAIRS
  if (pairs)  // uniform over the grid (host: teams == 1, an even grid)
    pair_partials(acc_g, acc_b, reinterpret_cast<float4*>(ring), pair_mbar, part_g, part_b, H);
  else
#endif
  write_partials<LNB_TEAM_SLICES != 0>(acc_g, acc_b, reinterpret_cast<float*>(ring), part_g, part_b, H, team_width);
#if LNB_FLAGS
  publish_partials(flags, epoch);
#endif
}
#if LNB_DYNAMIC
static_assert(LNB_RING == 2 && !LNB_LEAN && !LNB_STRIDED, "LNB_DYNAMIC: on ring2's order of operations");
/// Stage 1 with a dynamic row queue (a diagnostic, not a default): ring2's kernel, but each team
/// takes its rows from a global counter (one atomicAdd per row by the team's first thread, two rows
/// ahead of use) instead of a static band, so a team on a faster SM takes more rows and every SM
/// stops within about one row of the others. Which rows a team sums into its column partials then
/// depends on timing: dgamma/dbeta are correct to fp32 in any order but not bit-reproducible run to
/// run, which issue #15 asks for. What it measures is the cost of static bands, the one cost of the
/// default the other variants leave.
///   Rows in flight: as ring2 (the row of iteration it + 1 is in flight while `it` is worked on; the
///   row of it + 2 is copied into the slots of `it` after its dx). The row of it + 2 reaches the
///   team through s_row[it & 1][team], written by the first thread before the team's barrier of
///   iteration it and read after it (the team's named barrier, or __syncwarp for one-warp teams);
///   the slot is written again at it + 2, after the barrier of it + 1 that every reader of it has
///   reached. The atomicAdd for it + 3 is issued at it, so its latency is off the barrier's path.
///   Counter values only grow, so once a team sees a row >= T every later one is too (it stops
///   taking rows, and exits when that row comes up); every row < T handed out is worked on.
__global__ void __launch_bounds__(kCta, LNB_MIN_BLOCKS)
    ln_bwd_rows_dyn(const uint4* __restrict__ dy, const uint4* __restrict__ x, const float* __restrict__ mean,
                    const float* __restrict__ rstd, const float* __restrict__ gamma, uint4* __restrict__ dx,
                    float* __restrict__ part_g, float* __restrict__ part_b, int64_t T, int H, int team_width,
                    unsigned* __restrict__ queue) {
  extern __shared__ float4 smem_v[];
  __shared__ float2 red[2][kCtaWarps];
  __shared__ int s_row[2][kCtaWarps];  // [it & 1][team]: the row of iteration it + 2 (teams <= warps)
  const int nvec = H / 8;
  const int vpt = (nvec + team_width - 1) / team_width;
  float* s_gamma = reinterpret_cast<float*>(smem_v);
  uint4* ring = reinterpret_cast<uint4*>(s_gamma + H);
  float2* stats = reinterpret_cast<float2*>(ring + kStages * 2 * vpt * kCta);
  const int team = threadIdx.x / team_width, tl = threadIdx.x % team_width;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warps_per_team = team_width / 32;
  const bool first = tl == 0;
  const float inv_h = 1.0f / static_cast<float>(H);
  const unsigned my_ring = static_cast<unsigned>(__cvta_generic_to_shared(ring + threadIdx.x));
  const unsigned tensor_bytes = static_cast<unsigned>(vpt) * kCta * sizeof(uint4);
  auto slot = [&](int s, int q, int k) {
    return my_ring + static_cast<unsigned>(s * 2 + q) * tensor_bytes + static_cast<unsigned>(k * kCta * sizeof(uint4));
  };
  pdl_launch_dependents();
  const int T32 = static_cast<int>(T);
  auto take_row = [&]() { return static_cast<int>(atomicAdd(queue, 1u)); };
  // One commit per call, empty for a row past the end: the wait below counts groups.
  auto prefetch = [&](int row, int s) {
    if (row < T32) {
      const int64_t first_vec = static_cast<int64_t>(row) * nvec + tl;
      const uint4* src_dy = dy + first_vec;
      const uint4* src_x = x + first_vec;
#pragma unroll
      for (int k = 0; k < kMaxVec; ++k) {
        if (tl + k * team_width < nvec) {
          cp_async16(slot(s, 0, k), src_dy);
          cp_async16(slot(s, 1, k), src_x);
        }
        src_dy += team_width;
        src_x += team_width;
      }
      if (lane == 0) {
        cp_async4(&stats[s * kCtaWarps + warp].x, mean + row);
        cp_async4(&stats[s * kCtaWarps + warp].y, rstd + row);
      }
    }
    cp_async_commit();
  };
  if (first) {
    s_row[0][team] = take_row();
    s_row[1][team] = take_row();
  }
  __syncthreads();
  int row_cur = s_row[0][team], row_nxt = s_row[1][team];
  prefetch(row_cur, 0);
  prefetch(row_nxt, 1);
  // The row of iteration 2 (only the first thread's value is used); a row >= T stops the taking.
  int pending = first && row_nxt < T32 ? take_row() : T32;

  for (int i = threadIdx.x; i < H; i += kCta) s_gamma[i] = gamma[i];
  __syncthreads();  // gamma staged; and every read of s_row[0] above precedes its rewrite at it = 0

  float acc_g[kMaxVec][8], acc_b[kMaxVec][8];
#pragma unroll
  for (int k = 0; k < kMaxVec; ++k)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc_g[k][j] = acc_b[k][j] = 0.f;

  int s = 0;
  for (int it = 0; row_cur < T32; ++it) {  // row_cur is the same in every thread of the team
    const int row = row_cur;
    cp_async_wait<kStages - 1>();
    float2 st = make_float2(0.f, 0.f);
    if (lane == 0) st = stats[s * kCtaWarps + warp];
    const RowStats rst(__shfl_sync(0xffffffffu, st.x, 0), __shfl_sync(0xffffffffu, st.y, 0));
    float a = 0.f, b = 0.f;
#pragma unroll
    for (int k = 0; k < kMaxVec; ++k) {
      const int v = tl + k * team_width;
      if (v < nvec)
        accumulate_vec(lds128(slot(s, 0, k)), lds128(slot(s, 1, k)), Gamma8(s_gamma, v), rst, a, b, acc_g[k],
                       acc_b[k]);
    }
    if (first) s_row[it & 1][team] = pending;  // published by the team's barrier below
    team_sums<true>(a, b, red, it, team, warps_per_team);
    if (warps_per_team == 1) __syncwarp();
    const int row_n2 = s_row[it & 1][team];
    if (first && row_n2 < T32) pending = take_row();  // the row of it + 3, used one iteration later
    const DxCoef c(rst, a, b, inv_h);
    uint4* dst = dx + static_cast<int64_t>(row) * nvec + tl;
#pragma unroll
    for (int k = 0; k < kMaxVec; ++k) {
      const int v = tl + k * team_width;
      if (v < nvec) store_stream(dst, dx_vec(lds128(slot(s, 0, k)), lds128(slot(s, 1, k)), Gamma8(s_gamma, v), rst, c));
      dst += team_width;
    }
    prefetch(row_n2, s);  // into the slots just read (this thread's own)
    row_cur = row_nxt;
    row_nxt = row_n2;
    s ^= 1;
  }
  cp_async_wait<0>();
  __syncthreads();
  write_partials(acc_g, acc_b, reinterpret_cast<float*>(ring), part_g, part_b, H, team_width);
}
#endif  // LNB_DYNAMIC
#endif  // LNB_RING

/// Generic path, dx: a CTA per row; pass 1 the sums, pass 2 re-reads the row (L1/L2) for dx.
__global__ void __launch_bounds__(kThreads)
    ln_bwd_rows_generic(const __nv_bfloat16* __restrict__ dy, const __nv_bfloat16* __restrict__ x,
                        const float* __restrict__ mean, const float* __restrict__ rstd,
                        const float* __restrict__ gamma, __nv_bfloat16* __restrict__ dx, int64_t H) {
  __shared__ float2 red[kWarps];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * H;
  const float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
  float a = 0.f, b = 0.f;
  for (int64_t h = threadIdx.x; h < H; h += kThreads) {
    const float g = gamma[h] * __bfloat162float(dy[base + h]);
    a = fmaf(g, (__bfloat162float(x[base + h]) - mu) * rs, a);
    b += g;
  }
  a = warp_sum(a);
  b = warp_sum(b);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = make_float2(a, b);
  __syncthreads();
  a = b = 0.f;
  for (int w = 0; w < kWarps; ++w) {
    a += red[w].x;
    b += red[w].y;
  }
  const float inv_h = 1.0f / static_cast<float>(H);
  const float ca = rs * a * inv_h, cb = rs * b * inv_h;
  for (int64_t h = threadIdx.x; h < H; h += kThreads) {
    const float xh = (__bfloat162float(x[base + h]) - mu) * rs;
    dx[base + h] = __float2bfloat16_rn(fmaf(rs, gamma[h] * __bfloat162float(dy[base + h]), -fmaf(xh, ca, cb)));
  }
}

/// Generic path, column partials: blockIdx.y is a band of rows, a thread one column of it.
__global__ void __launch_bounds__(kThreads)
    ln_bwd_columns_generic(const __nv_bfloat16* __restrict__ dy, const __nv_bfloat16* __restrict__ x,
                           const float* __restrict__ mean, const float* __restrict__ rstd,
                           float* __restrict__ part_g, float* __restrict__ part_b, int64_t T, int64_t H,
                           int64_t rows_per_band) {
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (h >= H) return;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_band;
  const int64_t r1 = min(T, r0 + rows_per_band);
  float dg = 0.f, db = 0.f;
  for (int64_t t = r0; t < r1; ++t) {
    const float d = __bfloat162float(dy[t * H + h]);
    dg = fmaf(d, (__bfloat162float(x[t * H + h]) - mean[t]) * rstd[t], dg);
    db += d;
  }
  part_g[blockIdx.y * H + h] = dg;
  part_b[blockIdx.y * H + h] = db;
}

/// Stage 2: dgamma[h] = sum_p part_g[p][h] in a fixed order (strided slices, then a tree).
__global__ void __launch_bounds__(kReduceCols * kReduceSlices)
    ln_bwd_reduce_partials(const float* __restrict__ part_g, const float* __restrict__ part_b,
                           float* __restrict__ dgamma, float* __restrict__ dbeta, int64_t parts, int64_t H) {
  __shared__ float sg[kReduceSlices][kReduceCols + 1];
  __shared__ float sb[kReduceSlices][kReduceCols + 1];
  const int col = threadIdx.x % kReduceCols, slice = threadIdx.x / kReduceCols;
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kReduceCols + col;
  pdl_wait_primary();  // every partial row of stage 1 written and visible
  float g = 0.f, b = 0.f;
  // Unrolled so that 16 partial rows per thread are loaded before their (in-order) additions: the
  // few hundred rows sit in L2, and the short-H grids (32 CTAs at H = 1024) are latency-bound.
  if (h < H)
#pragma unroll 16
    for (int64_t p = slice; p < parts; p += kReduceSlices) {
      g += part_g[p * H + h];
      b += part_b[p * H + h];
    }
  sg[slice][col] = g;
  sb[slice][col] = b;
  __syncthreads();
  for (int s = kReduceSlices / 2; s > 0; s >>= 1) {
    if (slice < s) {
      sg[slice][col] += sg[slice + s][col];
      sb[slice][col] += sb[slice + s][col];
    }
    __syncthreads();
  }
  if (slice == 0 && h < H) {
    dgamma[h] = sg[0][col];
    dbeta[h] = sb[0][col];
  }
}

#if LNB_FLAGS
constexpr int kFlagK = 36;  ///< partial rows per stage-2 slice held in registers: G <= 8 x 36 = 288
/// Stage 2 with ready flags (LNB_FLAGS): the sums of ln_bwd_reduce_partials, in its order (slice s
/// adds rows s, s + 8, ... from zero, then the same tree), so the same bits; but each partial row
/// is loaded as soon as its CTA has published it (publish_partials) instead of after stage 1's
/// completion and memory flush (griddepcontrol.wait). Launched as stage 1's programmatic
/// dependent, its CTAs take the slots of the first stage-1 CTAs to finish and load the partial
/// rows of the finished CTAs while the last ones run; what is left after the last CTA's flag is
/// one acquire load, the loads of the rows published last and the in-order sums and tree.
///   Warp w is slice w, lane l column blockIdx.x * 32 + l; the slice's k-th row p = w + 8k is held
/// in registers vg[k], vb[k] (k < kFlagK, a constant index: the loop over k is unrolled) once
/// loaded, in any order; the additions run in k order at the end. Lane l polls the flags of
/// k = l and l + 32 with acquire loads, the ballot of the ready ones is the warp's mask, and
/// __syncwarp orders the observing lane's acquire before every lane's loads of that row (L2 loads:
/// no line of an earlier call left in L1). A warp with nothing new sleeps 128 ns between polls.
/// Every stage-1 CTA publishes once it has started, and every stage-1 CTA has started before this
/// grid launches (each signals launch_dependents after its start): the waits end.
/// No griddepcontrol.wait: nothing here reads what stage 1 wrote but through a flag. The call is
/// complete when the stream is, with both kernels on it.
__global__ void __launch_bounds__(kReduceCols * kReduceSlices)
    ln_bwd_reduce_flagged(const float* __restrict__ part_g, const float* __restrict__ part_b,
                          float* __restrict__ dgamma, float* __restrict__ dbeta, int64_t parts, int64_t H,
                          const unsigned* __restrict__ flags, unsigned epoch) {
  static_assert(kReduceCols == 32 && kReduceCols * kReduceSlices == 256, "a warp per slice, a lane per column");
  static_assert(kFlagK <= 64, "two flags per lane");
  __shared__ float sg[kReduceSlices][kReduceCols + 1];
  __shared__ float sb[kReduceSlices][kReduceCols + 1];
  const int col = threadIdx.x % kReduceCols, slice = threadIdx.x / kReduceCols;
  const int64_t h = static_cast<int64_t>(blockIdx.x) * kReduceCols + col;
  const int nk = parts > slice ? static_cast<int>((parts - slice + kReduceSlices - 1) / kReduceSlices) : 0;
  auto ready_flag = [&](int k) {
    unsigned f;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flags + slice + int64_t{kReduceSlices} * k) : "memory");
    return f == epoch;
  };
  float vg[kFlagK], vb[kFlagK];
#pragma unroll
  for (int k = 0; k < kFlagK; ++k) vg[k] = vb[k] = 0.f;
  uint64_t pending = nk >= 64 ? ~0ull : (1ull << nk) - 1;  // nk <= kFlagK (host)
  while (pending != 0) {  // uniform over the warp
    const bool r0 = (pending >> col) & 1 ? ready_flag(col) : false;
    const bool r1 = col + 32 < kFlagK && ((pending >> (col + 32)) & 1) ? ready_flag(col + 32) : false;
    const uint64_t ready = uint64_t{__ballot_sync(0xffffffffu, r0)} | (uint64_t{__ballot_sync(0xffffffffu, r1)} << 32);
    if (ready == 0) {
      __nanosleep(128);
      continue;
    }
    __syncwarp();
    if (h < H) {
#pragma unroll
      for (int k = 0; k < kFlagK; ++k)
        if ((ready >> k) & 1) {
          const int64_t p = slice + int64_t{kReduceSlices} * k;
          vg[k] = __ldcg(part_g + p * H + h);
          vb[k] = __ldcg(part_b + p * H + h);
        }
    }
    pending &= ~ready;
  }
  float g = 0.f, b = 0.f;
#pragma unroll
  for (int k = 0; k < kFlagK; ++k)
    if (k < nk) {
      g += vg[k];
      b += vb[k];
    }
  sg[slice][col] = g;
  sb[slice][col] = b;
  __syncthreads();
  for (int s = kReduceSlices / 2; s > 0; s >>= 1) {
    if (slice < s) {
      sg[slice][col] += sg[slice + s][col];
      sb[slice][col] += sb[slice + s][col];
    }
    __syncthreads();
  }
  if (slice == 0 && h < H) {
    dgamma[h] = sg[0][col];
    dbeta[h] = sb[0][col];
  }
}
#endif

/// The smallest team (a power of two from 32 to kThreads) whose vectors span a row of nvec.
int team_width_for(int64_t nvec) {
  int tw = 32;
  while (tw < kThreads && int64_t{tw} * kMaxVec < nvec) tw *= 2;
  return tw;
}

/// Partial rows the workspace holds, from shapes only: the vector path's at most kMaxParts CTAs,
/// the generic path's kFallbackParts bands, never more than T.
int64_t max_parts(int64_t T) { return std::max<int64_t>(1, std::min<int64_t>(T, kMaxParts)); }

struct Buffers {
  float *part_g, *part_b;
  /// LNB_DYNAMIC: the row counter, zeroed before every stage 1.
  unsigned* queue = nullptr;
  /// LNB_FLAGS: a ready flag per stage-1 CTA (publish_partials).
  unsigned* flags = nullptr;
};
Buffers carve(d2k::Workspace& ws, int64_t T, int64_t H) {
  const uint64_t n = static_cast<uint64_t>(max_parts(T)) * static_cast<uint64_t>(H);
  Buffers b{ws.take<float>(n), ws.take<float>(n)};
#if LNB_DYNAMIC
  b.queue = ws.take<unsigned>(1);
#endif
#if LNB_FLAGS
  b.flags = ws.take<unsigned>(static_cast<uint64_t>(kMaxParts));
#endif
  return b;
}

size_t vec_smem_bytes(int64_t H, int team_width) {
  return static_cast<size_t>(H) * sizeof(float) * (team_width < kCta ? 2 : 1);
}

/// Bands for stage 1: G = min(resident CTAs, kMaxParts, rows / teams), B = ceil(T / G).
/// unit (LNB_CLUSTER_PAIRS): CTAs per cluster; G is a multiple of it, or 1 where the rows do not
/// fill two CTAs.
Plan plan_vec(int64_t T, int64_t H, int resident, int unit = 1) {
  (void)unit;  // strided builds with LNB_WHOLE_ROUNDS or LNB_CLUSTER_PAIRS only
  Plan p;
  p.team_width = team_width_for(H / 8);
  const int64_t teams = kCta / p.team_width;
  const int64_t want = std::max<int64_t>(1, std::min<int64_t>({int64_t{resident}, kMaxParts, (T + teams - 1) / teams}));
  p.rows_per_cta = (T + want - 1) / want;
#if LNB_STRIDED || LNB_DYNAMIC
  p.rows_per_cta = 0;  // no bands: rows (it * G + c) * teams + team (ln_bwd_rows_ring), or a row queue
#if LNB_WHOLE_ROUNDS || LNB_CLUSTER_PAIRS
  const int64_t u = want >= unit ? unit : 1;
  int64_t g = want / u * u;
#if LNB_WHOLE_ROUNDS
  // The fewest CTAs (a multiple of u) that take the rows in as many rounds as g CTAs: at most
  // g, at least T / (teams x rounds), so the rounds do not change.
  const int64_t rounds = (T + g * teams - 1) / (g * teams);
  g = (T + rounds * teams * u - 1) / (rounds * teams * u) * u;
#endif
  p.ctas = g;
  return p;
#else
  p.ctas = want;
  return p;
#endif
#endif
  p.ctas = (T + p.rows_per_cta - 1) / p.rows_per_cta;
  return p;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

#if LNB_FLAGS
/// LNB_FLAGS: the value this call's stage-1 CTAs publish in their flags; another value every call
/// of this library (never 0, the cleared flag), so that a flag of the previous call is not read as
/// this call's.
unsigned next_epoch() {
  static std::atomic<unsigned> count{0};
  unsigned e = count.fetch_add(1, std::memory_order_relaxed) + 1;
  while (e == 0) e = count.fetch_add(1, std::memory_order_relaxed) + 1;
  return e;
}
#endif

}  // namespace lnb

extern "C" D2K_EXPORT uint32_t d2k_abi_version(void) { return D2K_ABI_VERSION; }

extern "C" D2K_EXPORT int32_t d2k_workspace_size(const d2k_args* args, uint64_t* bytes) {
  D2K_ENTRY(args, {
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    if (T < 0 || H < 1) throw d2k::abi_error("expert: need T >= 0 and H >= 1");
    d2k::Workspace ws;
    lnb::carve(ws, T, H);
    *bytes = ws.bytes();
    return D2K_OK;
  });
}

extern "C" D2K_EXPORT int32_t d2k_run(const d2k_args* args) {
  D2K_ENTRY(args, {
    using namespace lnb;
    const int64_t T = d2k::scalar_i(args, "T");
    const int64_t H = d2k::scalar_i(args, "H");
    if (T < 0 || H < 1) throw d2k::abi_error("expert: need T >= 0 and H >= 1");
    if (T > 2147483647 - 65536) throw d2k::abi_error("expert: T above 2^31 - 2^16 is not supported");
    const DLTensor& dy = d2k::input(args, "dy", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& x = d2k::input(args, "x", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& mean = d2k::input(args, "mean", kDLCUDA, d2k::dl::f32, {T});
    const DLTensor& rstd = d2k::input(args, "rstd", kDLCUDA, d2k::dl::f32, {T});
    const DLTensor& gamma = d2k::input(args, "gamma", kDLCUDA, d2k::dl::f32, {H});
    const DLTensor& dx = d2k::output(args, "dx", kDLCUDA, d2k::dl::bf16, {T, H});
    const DLTensor& dgamma = d2k::output(args, "dgamma", kDLCUDA, d2k::dl::f32, {H});
    const DLTensor& dbeta = d2k::output(args, "dbeta", kDLCUDA, d2k::dl::f32, {H});
    d2k::Workspace ws(args);
    const Buffers buf = carve(ws, T, H);
    auto stream = static_cast<cudaStream_t>(args->stream);
#if LNB_FLAGS
    const unsigned epoch = next_epoch();
#endif

    const auto* dyp = d2k::data<const __nv_bfloat16>(dy);
    const auto* xp = d2k::data<const __nv_bfloat16>(x);
    const auto* mp = d2k::data<const float>(mean);
    const auto* rp = d2k::data<const float>(rstd);
    const auto* gp = d2k::data<const float>(gamma);
    auto* dxp = d2k::data<__nv_bfloat16>(dx);
    const bool vec = H % 8 == 0 && H <= kMaxVecH && aligned16(dyp) && aligned16(xp) && aligned16(gp) &&
                     aligned16(dxp);
    int64_t parts = 0;
    if (T > 0 && vec) {
      const int tw = team_width_for(H / 8);
#if LNB_RING
#if LNB_DYNAMIC
      auto* const rows_kernel = ln_bwd_rows_dyn;
#else
      auto* const rows_kernel = ln_bwd_rows_ring;
#endif
      const size_t smem = ring_smem_bytes(H, static_cast<int>((H / 8 + tw - 1) / tw));
      // Shared memory over L1: the ring bypasses L1 (.cg) and two CTAs of ~100 KB need the largest carveout.
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(rows_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                              cudaSharedmemCarveoutMaxShared));
#else
      auto* const rows_kernel = ln_bwd_rows_vec;
      const size_t smem = vec_smem_bytes(H, tw);
#endif
      D2K_CUDA_TRY(args, cudaFuncSetAttribute(rows_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(smem)));
      int dev = 0, sms = 0, per_sm = 0;
      D2K_CUDA_TRY(args, cudaGetDevice(&dev));
      D2K_CUDA_TRY(args, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      D2K_CUDA_TRY(args, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rows_kernel, kCta, smem));
#if LNB_CLUSTER_PAIRS
      // One-team CTAs (H > 4096) in clusters of two: as many CTAs as clusters of two are resident
      // at once (a GPC's slots pair up, so on the H200 the same 264); the plain grid otherwise.
      cudaLaunchConfig_t ccfg = {};
      cudaLaunchAttribute cattr[1];
      cattr[0].id = cudaLaunchAttributeClusterDimension;
      cattr[0].val.clusterDim.x = 2;
      cattr[0].val.clusterDim.y = 1;
      cattr[0].val.clusterDim.z = 1;
      ccfg.attrs = cattr;
      ccfg.numAttrs = 1;
      ccfg.gridDim = dim3(static_cast<unsigned>(2 * std::max(1, sms)));
      ccfg.blockDim = dim3(kCta);
      ccfg.dynamicSmemBytes = smem;
      ccfg.stream = stream;
      int clusters = 0;
      if (tw == kCta) {
        // Queried once per device and shared-memory size (a GPC-level count: host time that the
        // timed call would otherwise pay on every call).
        static std::mutex m;
        static int known_dev = -1, known_clusters = 0;
        static size_t known_smem = 0;
        std::lock_guard<std::mutex> lock(m);
        if (known_dev != dev || known_smem != smem) {
          D2K_CUDA_TRY(args, cudaOccupancyMaxActiveClusters(&known_clusters, rows_kernel, &ccfg));
          known_dev = dev;
          known_smem = smem;
        }
        clusters = known_clusters;
      }
      const Plan p = plan_vec(T, H, clusters > 0 ? 2 * clusters : std::max(1, sms * per_sm), clusters > 0 ? 2 : 1);
      const int pairs = clusters > 0 && p.ctas % 2 == 0 ? 1 : 0;
#else
      const Plan p = plan_vec(T, H, std::max(1, sms * per_sm));
#endif
#if LNB_DYNAMIC
      D2K_CUDA_TRY(args, cudaMemsetAsync(buf.queue, 0, sizeof(unsigned), stream));
      rows_kernel<<<static_cast<unsigned>(p.ctas), kCta, smem, stream>>>(
          reinterpret_cast<const uint4*>(dyp), reinterpret_cast<const uint4*>(xp), mp, rp, gp,
          reinterpret_cast<uint4*>(dxp), buf.part_g, buf.part_b, T, static_cast<int>(H), p.team_width, buf.queue);
      parts = p.ctas;
#elif LNB_CLUSTER_PAIRS
      if (pairs) {
        ccfg.gridDim = dim3(static_cast<unsigned>(p.ctas));
        D2K_CUDA_TRY(args, cudaLaunchKernelEx(&ccfg, rows_kernel, reinterpret_cast<const uint4*>(dyp),
                                              reinterpret_cast<const uint4*>(xp), mp, rp, gp,
                                              reinterpret_cast<uint4*>(dxp), buf.part_g, buf.part_b, T,
                                              static_cast<int>(H), p.team_width, p.rows_per_cta, pairs));
      } else {
        rows_kernel<<<static_cast<unsigned>(p.ctas), kCta, smem, stream>>>(
            reinterpret_cast<const uint4*>(dyp), reinterpret_cast<const uint4*>(xp), mp, rp, gp,
            reinterpret_cast<uint4*>(dxp), buf.part_g, buf.part_b, T, static_cast<int>(H), p.team_width,
            p.rows_per_cta, pairs);
      }
      parts = pairs ? p.ctas / 2 : p.ctas;  // one partial row per pair
#else
      rows_kernel<<<static_cast<unsigned>(p.ctas), kCta, smem, stream>>>(
          reinterpret_cast<const uint4*>(dyp), reinterpret_cast<const uint4*>(xp), mp, rp, gp,
          reinterpret_cast<uint4*>(dxp), buf.part_g, buf.part_b, T, static_cast<int>(H), p.team_width,
          p.rows_per_cta
#if LNB_FLAGS
          , buf.flags, epoch
#endif
      );
      parts = p.ctas;
#endif
      D2K_CUDA_TRY(args, cudaGetLastError());
    } else if (T > 0) {
      ln_bwd_rows_generic<<<static_cast<unsigned>(T), kThreads, 0, stream>>>(dyp, xp, mp, rp, gp, dxp, H);
      D2K_CUDA_TRY(args, cudaGetLastError());
      const int64_t bands = std::min<int64_t>({T, kFallbackParts, max_parts(T)});
      const int64_t rows_per_band = (T + bands - 1) / bands;
      parts = (T + rows_per_band - 1) / rows_per_band;
      const dim3 grid(static_cast<unsigned>((H + kThreads - 1) / kThreads), static_cast<unsigned>(parts));
      ln_bwd_columns_generic<<<grid, kThreads, 0, stream>>>(dyp, xp, mp, rp, buf.part_g, buf.part_b, T, H,
                                                            rows_per_band);
      D2K_CUDA_TRY(args, cudaGetLastError());
    }
    // T = 0: no partials, dgamma = dbeta = 0.
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = LNB_PDL && vec ? 1 : 0;  // the generic path's kernels do not signal early
    cfg.stream = stream;
    cfg.gridDim = dim3(static_cast<unsigned>((H + kReduceCols - 1) / kReduceCols));
    cfg.blockDim = dim3(kReduceCols * kReduceSlices);
#if LNB_FLAGS
    // Partial rows of more CTAs than the flagged stage 2 holds (a GPU of more than 144 SMs) take
    // the plain stage 2: stage 1's flags are then set and never read.
    if (vec && T > 0 && parts <= int64_t{kReduceSlices} * kFlagK) {
      D2K_CUDA_TRY(args, cudaLaunchKernelEx(&cfg, ln_bwd_reduce_flagged, static_cast<const float*>(buf.part_g),
                                            static_cast<const float*>(buf.part_b), d2k::data<float>(dgamma),
                                            d2k::data<float>(dbeta), parts, H, static_cast<const unsigned*>(buf.flags),
                                            epoch));
      return D2K_OK;
    }
#endif
    D2K_CUDA_TRY(args, cudaLaunchKernelEx(&cfg, ln_bwd_reduce_partials, static_cast<const float*>(buf.part_g),
                                          static_cast<const float*>(buf.part_b), d2k::data<float>(dgamma),
                                          d2k::data<float>(dbeta), parts, H));
    return D2K_OK;
  });
}
