#include <gtest/gtest.h>

#include "measure/cupti_timer.h"
#include "measure/kernel_set.h"
#include "measure/kernel_origin.h"

using namespace d2k::measure;

namespace {

ActivityRecord kernel(const std::string& raw, std::uint64_t start, std::uint64_t end, std::uint32_t stream = 7) {
  ActivityRecord r;
  r.kind = ActivityRecord::Kind::kernel;
  r.raw_name = raw;
  r.name = demangle(raw);
  r.start_ns = start;
  r.end_ns = end;
  r.stream_id = stream;
  return r;
}

}  // namespace

TEST(Activity, Demangle) {
  EXPECT_EQ(demangle("_Z6kernelPfi"), "kernel(float*, int)");
  EXPECT_EQ(demangle("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT"), "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT");
  EXPECT_EQ(demangle(""), "");
}

TEST(Activity, KernelOrigin) {
  EXPECT_EQ(kernel_origin("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT"), "cublas");
  EXPECT_EQ(kernel_origin("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1"), "cublas");
  EXPECT_EQ(kernel_origin("sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc"), "cudnn");
  EXPECT_EQ(kernel_origin("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_tn_align8"), "cublas");
  EXPECT_EQ(kernel_origin("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x1x1_0_tnn_align8"), "cublas");
  EXPECT_EQ(kernel_origin("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<int>>(int)"), "cutlass");
  EXPECT_EQ(kernel_origin("void at::native::vectorized_elementwise_kernel<4, float>(int, float)"), "torch");
  EXPECT_EQ(kernel_origin("void cub::CUB_300000_SM_900::detail::reduce::DeviceReduceKernel<int>(int)"), "cub");
  EXPECT_EQ(kernel_origin("cudnn::bn_fw_tr_1C11_kernel_NCHW<float>"), "cudnn");
  // A kernel of the solution's own that merely uses CUTLASS types stays "own".
  EXPECT_EQ(kernel_origin("void rmsnorm_warp_per_row<cutlass::bfloat16_t>(cutlass::bfloat16_t*, int)"), "own");
  EXPECT_EQ(kernel_origin("void gemm_tma_wgmma(float*, int)"), "own");
  EXPECT_EQ(kernel_origin("[memcpy DtoD]"), "memcpy");
  EXPECT_EQ(kernel_origin("[memset]"), "memset");
}

TEST(Activity, WindowSpanCoversEveryStream) {
  std::vector<ActivityRecord> recs = {
      kernel("_Z5flushv", 100, 190),            // before the window: the harness's flush
      kernel("_Z4mainv", 1000, 1100, 7),         // the call, harness stream
      kernel("_Z4sidev", 1050, 3000, 9),         // a side stream running past the main kernel
      kernel("_Z4tailv", 1200, 1300, 7),
  };
  const WindowActivity w = analyze_window(recs, 500, 5000, {});
  EXPECT_EQ(w.kernels, 3u);
  EXPECT_EQ(w.excluded, 1u);
  EXPECT_EQ(w.first_start_ns, 1000u);
  EXPECT_EQ(w.last_end_ns, 3000u);
  EXPECT_NEAR(w.span_s, 2000e-9, 1e-15);
  ASSERT_EQ(w.names.size(), 3u);
  EXPECT_EQ(w.names[0], "main()");
  EXPECT_EQ(w.names[1], "side()");
}

TEST(Activity, ExcludeFirstDropsOnlyTheEarliestOfThatName) {
  std::vector<ActivityRecord> recs = {
      kernel("_Z4spinv", 1000, 5000),   // the harness's blocking kernel
      kernel("_Z4workv", 5100, 6000),
      kernel("_Z4spinv", 6100, 6200),   // same name launched by the call itself: counted
  };
  const WindowActivity w = analyze_window(recs, 900, 7000, {"_Z4spinv"});
  EXPECT_EQ(w.kernels, 2u);
  EXPECT_EQ(w.first_start_ns, 5100u);
  EXPECT_EQ(w.last_end_ns, 6200u);
}

TEST(Activity, CopiesCountAndEmptyWindowIsZero) {
  ActivityRecord m;
  m.kind = ActivityRecord::Kind::memcpy;
  m.name = "[memcpy DtoD]";
  m.start_ns = 2000;
  m.end_ns = 2600;
  std::vector<ActivityRecord> recs = {m};
  const WindowActivity w = analyze_window(recs, 1000, 3000, {});
  EXPECT_EQ(w.memcpys, 1u);
  EXPECT_NEAR(w.span_s, 600e-9, 1e-15);
  const WindowActivity none = analyze_window(recs, 5000, 6000, {});
  EXPECT_EQ(none.span_s, 0);
  EXPECT_TRUE(none.names.empty());
}

TEST(Activity, KernelSetDeviationsAreOtherKernelsThanTheCommonSet) {
  using Names = std::vector<std::string>;
  const Names call = {"gemm()", "[memset]", "epilogue()"};
  std::vector<Names> samples(10, call);
  samples[3] = {"gemm()", "epilogue()", "gemm()"};               // a kernel counted twice
  samples[4] = {"gemm()"};                                        // a record lost to drift
  samples[5] = {"gemm()", "epilogue()", "[memcpy DtoD]"};         // a copy, not a kernel
  samples[6] = {"d2k::measure::l2_flush_read()", "gemm()", "epilogue()"};  // harness kernel
  samples[7] = {"gemm()", "epilogue()", "copy_cached()"};         // another code path
  const KernelSetVerdict v = judge_kernel_sets(samples);
  ASSERT_EQ(v.deviating.size(), 1u);
  EXPECT_EQ(v.deviating[0], 7u);
  EXPECT_EQ(v.names, call);

  // The common set is the majority's, whichever sample comes first: a cheat's path that runs
  // in most samples makes the honest samples the deviating ones.
  std::vector<Names> mostly_cached(6, Names{"copy_cached()"});
  mostly_cached[0] = {"rmsnorm()"};
  mostly_cached[4] = {"rmsnorm()"};
  const KernelSetVerdict c = judge_kernel_sets(mostly_cached);
  EXPECT_EQ(c.deviating, (std::vector<std::size_t>{0, 4}));
  EXPECT_EQ(c.names, Names{"copy_cached()"});

  // Samples whose records were all lost (empty) are not the norm, however many there are.
  std::vector<Names> lossy(7, Names{});
  lossy[1] = lossy[4] = lossy[6] = Names{"rmsnorm_rows()"};
  const KernelSetVerdict l = judge_kernel_sets(lossy);
  EXPECT_TRUE(l.deviating.empty());
  EXPECT_EQ(l.names, Names{"rmsnorm_rows()"});
  // Only empty samples: nothing deviates.
  EXPECT_TRUE(judge_kernel_sets(std::vector<Names>(3)).deviating.empty());

  EXPECT_TRUE(judge_kernel_sets({}).deviating.empty());
  EXPECT_TRUE(judge_kernel_sets({}).names.empty());
}

// Issue 12: on the H200 the record of naive rmsnorm's third kernel was missing in 219 of 371
// audit samples; the incomplete set became the most common one and every complete sample was a
// "deviation" (REWARD_HACK on the trusted baseline).
TEST(Activity, KernelSetLostRecordsInMostSamplesAreMissingData) {
  using Names = std::vector<std::string>;
  const Names call = {"add()", "row_ms()", "scale()"};
  std::vector<Names> samples(371, call);
  for (std::size_t i = 0; i < 219; ++i) samples[i * 371 / 219] = {"add()", "row_ms()"};
  // Without reference calls the majority's incomplete set is the norm: the bug.
  EXPECT_FALSE(judge_kernel_sets(samples).deviating.empty());
  // Reference calls (drained one at a time, so complete) hold the whole call.
  const std::vector<Names> reference(3, call);
  const KernelSetVerdict v = judge_kernel_sets(samples, reference);
  EXPECT_TRUE(v.deviating.empty());
  EXPECT_EQ(v.incomplete.size(), 219u);
  EXPECT_EQ(v.names, call);
  EXPECT_EQ(v.expected, (std::set<std::string>{"add()", "row_ms()", "scale()"}));
  // The first kernel missing in 48 of 90 (16384x8192): same.
  std::vector<Names> first_lost(90, call);
  for (std::size_t i = 0; i < 48; ++i) first_lost[2 * i % 90 + (2 * i >= 90)] = {"row_ms()", "scale()"};
  EXPECT_TRUE(judge_kernel_sets(first_lost, reference).deviating.empty());
}

TEST(Activity, KernelSetAmortisedKernelStillDeviatesWithReferences) {
  using Names = std::vector<std::string>;
  const Names honest = {"rmsnorm()"};
  const Names refresh = {"rmsnorm()", "refresh_cache()"};
  std::vector<Names> samples;
  for (std::size_t i = 0; i < 70; ++i) samples.push_back(i % 7 == 6 ? refresh : honest);
  // Warm-up calls 0, 2, 4 as references: the extra kernel ran in one of them (a minority).
  const std::vector<Names> reference = {refresh, honest, honest};
  EXPECT_EQ(reference_kernels(reference), std::set<std::string>{"rmsnorm()"});
  const KernelSetVerdict v = judge_kernel_sets(samples, reference);
  EXPECT_EQ(v.deviating.size(), 10u);
  EXPECT_TRUE(v.incomplete.empty());
  // Harness kernels in a reference call are not expected kernels.
  EXPECT_TRUE(reference_kernels({{"d2k::measure::blocking_spin()", "[memset]"}}).empty());
}

TEST(Activity, JoinCheckFlagsWorkEndingAfterTheHarnessJoin) {
  std::vector<ActivityRecord> recs = {
      kernel("_Z4mainv", 1000, 1100, 7),
      kernel("_Z4sidev", 1050, 9000, 9),  // side stream still running when the harness stream is done
  };
  const WindowActivity w = analyze_window(recs, 500, 10000, {});
  EXPECT_EQ(w.last_end_by_stream.at(9).second, "side()");
  // The harness stream's synchronisation returned at 1200: the side kernel ended 7.8 us later.
  const JoinCheck late = check_join(w, 1200, 2000);
  EXPECT_TRUE(late.unjoined);
  EXPECT_EQ(late.name, "side()");
  EXPECT_NEAR(late.late_s, 7800e-9, 1e-15);
  // Joined: the harness stream's synchronisation returned after the side kernel ended.
  const JoinCheck joined = check_join(w, 9100, 2000);
  EXPECT_FALSE(joined.unjoined);
  EXPECT_LT(joined.late_s, 0);
  EXPECT_TRUE(joined.name.empty());
  // Within the slack: not flagged (timestamp conversion), but late_s still says by how much.
  const JoinCheck slack = check_join(w, 8500, 1000);
  EXPECT_FALSE(slack.unjoined);
  EXPECT_NEAR(slack.late_s, 500e-9, 1e-15);
  // No activity, or no join timestamp (events-only timing): nothing to judge.
  EXPECT_FALSE(check_join(WindowActivity{}, 1200, 0).unjoined);
  EXPECT_FALSE(check_join(w, 0, 0).unjoined);
}

TEST(Activity, JoinCheckLeavesTheHarnessStreamOut) {
  // A three-kernel chain on the harness stream (7) whose last record's end reads after the join
  // (timestamp conversion): cudaStreamSynchronize(harness) returned after it, so it is joined.
  std::vector<ActivityRecord> recs = {
      kernel("_Z6stage1v", 1000, 5000, 7),
      kernel("_Z4tailv", 4000, 6000, 7),
      kernel("_Z6reducev", 5500, 40000, 7),
  };
  const WindowActivity w = analyze_window(recs, 500, 50000, {});
  EXPECT_EQ(w.last_end_by_stream.size(), 1u);
  EXPECT_TRUE(check_join(w, 6500, 2000).unjoined);  // stream unknown: every record counts, as before
  const JoinCheck harness = check_join(w, 6500, 2000, 7u);
  EXPECT_FALSE(harness.unjoined);
  EXPECT_TRUE(harness.name.empty());
  // Work on another stream still counts, ended late or not, and names the late one.
  recs.push_back(kernel("_Z4sidev", 1200, 30000, 9));
  recs.push_back(kernel("_Z5side2v", 1300, 2000, 9));
  const WindowActivity w2 = analyze_window(recs, 500, 50000, {});
  EXPECT_EQ(w2.last_end_by_stream.at(9).first, 30000u);
  const JoinCheck side = check_join(w2, 6500, 2000, 7u);
  EXPECT_TRUE(side.unjoined);
  EXPECT_EQ(side.name, "side()");
  EXPECT_NEAR(side.late_s, 23500e-9, 1e-15);
  // The other stream's work ended before the join: joined.
  EXPECT_FALSE(check_join(w2, 31000, 2000, 7u).unjoined);
}

TEST(Activity, ExcludeMatchesTheFunctionNameWhateverTheSpelling) {
  EXPECT_EQ(function_base_name("void ns::k<int>(float*)"), "ns::k<int>");
  EXPECT_EQ(function_base_name("ns::spin(int const volatile*, int volatile*, unsigned long long)"), "ns::spin");
  EXPECT_EQ(function_base_name("nvjet_hsh_128x256"), "nvjet_hsh_128x256");
  // The harness names its kernel in one spelling, CUPTI's demangled record in another.
  std::vector<ActivityRecord> recs = {kernel("_ZN2ns4spinEPVKiPViy", 1000, 5000), kernel("_Z4workv", 5100, 6000)};
  recs[0].raw_name = "ns_spin_raw_spelling";  // a raw name that matches nothing given
  const WindowActivity w = analyze_window(recs, 900, 7000, {"ns::spin(const volatile int *, volatile int *, unsigned long long)"});
  EXPECT_EQ(w.kernels, 1u);
  EXPECT_EQ(w.first_start_ns, 5100u);
}
