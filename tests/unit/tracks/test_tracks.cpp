// The track seam on the host: the registry, the definition checks, built-in targets (variants
// included) and what each track adds to the compile.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/task_loader.h"
#include "tracks/track.h"

namespace d2k {
namespace {

namespace fs = std::filesystem;

TEST(TrackRegistry, KnowsCudaAndCutlassAndRefusesOthersWithTheList) {
  EXPECT_EQ(track_names(), (std::vector<std::string>{"cuda", "cutlass", "triton"}));
  EXPECT_EQ(find_track("cutlass").name(), "cutlass");
  EXPECT_EQ(lookup_track("bogus"), nullptr);
  try {
    find_track("bogus");
    ADD_FAILURE() << "bogus accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown track 'bogus' (cuda, cutlass, triton)");
  }
}

// A JIT track's worker compiles every workload shape before the lockdown, inside the start's
// deadline: the deadline grows per shape there (torch_compile's prepare of moe_topk_router's five
// shapes outlasted 60 s on the H200), and stays as it is for the tracks compiled ahead of time.
TEST(TrackRegistry, JitTracksGetStartTimePerPreparedShape) {
  EXPECT_EQ(find_track("cuda").prepare_seconds_per_shape(), 0.0);
  EXPECT_EQ(find_track("cutlass").prepare_seconds_per_shape(), 0.0);
  EXPECT_GE(find_track("torch_compile").prepare_seconds_per_shape(), 120.0);
  EXPECT_GT(find_track("triton").prepare_seconds_per_shape(), 0.0);
  EXPECT_LT(find_track("torch_eager").prepare_seconds_per_shape(),
            find_track("torch_compile").prepare_seconds_per_shape());
}

TEST(TrackRegistry, StarterLivesUnderTheTrackName) {
  EXPECT_EQ(find_track("cutlass").starter_dir("/d/task"), fs::path("/d/task/starter/cutlass"));
}

TEST(TrackDefinition, ChecksNamesHeadersAndLinks) {
  Definition def;
  def.tracks["cuda"] = TrackSpec{};
  def.tracks["cutlass"] = TrackSpec{{"cutlass"}, {"cublas"}, true};
  Diagnostics ok;
  check_definition_tracks(def, "d.json", ok);
  EXPECT_TRUE(ok.ok()) << ok.format();

  def.tracks["bogus"] = TrackSpec{};
  def.tracks["cuda"].headers = {"cutlass"};              // cuda adds no header packages
  def.tracks["cutlass"].link = {"cutlass", "nosuchlib"};  // -lcutlass does not exist
  Diagnostics d;
  check_definition_tracks(def, "d.json", d);
  EXPECT_TRUE(d.has_error("d.json", 0, "tracks.bogus")) << d.format();
  EXPECT_TRUE(d.contains("unknown track (cuda, cutlass, triton)")) << d.format();
  EXPECT_TRUE(d.has_error("d.json", 0, "tracks.cuda.headers[0]")) << d.format();
  EXPECT_TRUE(d.has_error("d.json", 0, "tracks.cutlass.link[0]")) << d.format();
  EXPECT_TRUE(d.contains("list it under headers")) << d.format();
  EXPECT_TRUE(d.has_error("d.json", 0, "tracks.cutlass.link[1]")) << d.format();
}

TEST(TrackDefinition, LoaderReadsHeadersLinkVendorKernelsAndRefusesLibraries) {
  // definition.json's tracks section as core's loader reads it (the three fields), and the old
  // single `libraries` list refused with a pointer to what replaced it.
  auto parse = [](const char* tracks, Diagnostics& d) {
    auto j = nlohmann::ordered_json::parse(std::string(R"({"name": "t", "op_type": "x", "description": "d",
      "axes": {"N": {"type": "var"}}, "inputs": {"a": {"shape": ["N"], "dtype": "float32"}},
      "outputs": {"b": {"shape": ["N"], "dtype": "float32"}}, "cost": {"bytes": "8 * N"}, "tracks": )") +
                                               tracks + "}");
    return definition_from_json(j, d, "d.json");
  };
  Diagnostics ok;
  Definition def = parse(R"({"cutlass": {"headers": ["cutlass"], "link": ["cublas"], "vendor_kernels": true}})", ok);
  const TrackSpec& spec = def.tracks.at("cutlass");
  EXPECT_EQ(spec.headers, (std::vector<std::string>{"cutlass"}));
  EXPECT_EQ(spec.link, (std::vector<std::string>{"cublas"}));
  EXPECT_TRUE(spec.vendor_kernels);
  Diagnostics old;
  parse(R"({"cutlass": {"libraries": ["cutlass"]}})", old);
  EXPECT_TRUE(old.has_error("d.json", 0, "tracks.cutlass.libraries")) << old.format();
  EXPECT_TRUE(old.contains("replaced by headers, link and vendor_kernels")) << old.format();
  Diagnostics bad;
  parse(R"({"cuda": {"vendor_kernels": "yes"}})", bad);
  EXPECT_TRUE(bad.has_error("d.json", 0, "tracks.cuda.vendor_kernels")) << bad.format();
}

TEST(TrackDefinition, EveryOfferedTrackHasAStarter) {
  Task task;
  task.dir = fs::path(D2K_SOURCE_DIR) / "dataset" / "fused_add_rmsnorm";
  task.def.tracks["cuda"] = TrackSpec{};
  task.def.tracks["cutlass"] = TrackSpec{{"cutlass"}, {}, false};
  Diagnostics ok;
  check_task_tracks(task, ok);
  EXPECT_TRUE(ok.ok()) << ok.format();
  task.dir = fs::path(D2K_SOURCE_DIR) / "dataset" / "hash_join";  // offers cuda only
  Diagnostics d;
  check_task_tracks(task, d);
  EXPECT_TRUE(d.contains("offers the cutlass track but has no starter/cutlass/solution.cu")) << d.format();
}

TEST(TrackCompile, CutlassAddsItsHeaderTreeAndLinksNothing) {
  const TrackSpec spec{{"cutlass"}, {}, false};
  CompileOptions co = find_track("cutlass").compile_options(spec);
  ASSERT_EQ(co.system_headers.size(), 1u);
  EXPECT_TRUE(fs::exists(co.system_headers[0].dir / "cute" / "tensor.hpp")) << co.system_headers[0].dir;
  EXPECT_TRUE(fs::exists(co.system_headers[0].dir / co.system_headers[0].stamp));
  EXPECT_TRUE(co.link_libraries.empty());
  EXPECT_EQ(co.track, "cutlass");
  const auto flags = nvcc_flags(co);
  for (const auto& f : flags) EXPECT_EQ(f.find("-lcutlass"), std::string::npos);
  // CUTLASS calls the tensor-map encoder directly, not through cudaGetDriverEntryPoint; the
  // driver's stub is linked only where it is called (no DT_NEEDED otherwise, no RUNPATH).
  auto has = [](const std::vector<std::string>& fl, const std::string& f) {
    return std::find(fl.begin(), fl.end(), f) != fl.end();
  };
  EXPECT_TRUE(has(flags, "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1"));
  EXPECT_TRUE(has(flags, "--as-needed,-lcuda,--no-as-needed"));
  for (const auto& f : flags) EXPECT_EQ(f.find("rpath"), std::string::npos) << f;

  CompileOptions cuda = find_track("cuda").compile_options(TrackSpec{{}, {"cublas"}, true});
  EXPECT_TRUE(cuda.system_headers.empty());
  EXPECT_EQ(cuda.link_libraries, (std::vector<std::string>{"cublas"}));
  EXPECT_FALSE(has(nvcc_flags(cuda), "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1"));
  EXPECT_TRUE(has(nvcc_flags(cuda), "--as-needed,-lcuda,--no-as-needed"));
  EXPECT_EQ(find_track("cuda").symbol_policy(TrackSpec{{}, {"cublas"}, true}).allowed_libraries,
            (std::vector<std::string>{"cublas"}));
}

TEST(TrackBuild, ATrackTheTaskDoesNotOfferIsRefused) {
  Task task;
  task.def.name = "t";
  task.def.tracks["cuda"] = TrackSpec{};
  BuiltSolution b = find_track("cutlass").build(task, "/nonexistent");
  ASSERT_FALSE(b.target.has_value());
  EXPECT_EQ(b.failure.status, Status::INVALID_SUBMISSION);
  EXPECT_NE(b.failure.message.find("does not offer the cutlass track (it offers: cuda)"), std::string::npos)
      << b.failure.message;
}

TEST(BuiltinTargets, VariantsResolveToTheirLibrary) {
  ::setenv("D2K_IMPL_DIR", "/impl", 1);
  EXPECT_EQ(builtin_target("rms", "expert").so, fs::path("/impl/rms/expert.so"));
  EXPECT_EQ(builtin_target("rms", "expert:wide_rows").so, fs::path("/impl/rms/expert_wide_rows.so"));
  EXPECT_EQ(builtin_target("rms", "expert:wide_rows").name, "expert:wide_rows");
  EXPECT_TRUE(is_builtin_name("expert:v2"));
  EXPECT_FALSE(is_builtin_name("expert:"));
  EXPECT_FALSE(is_builtin_name("expert:../naive"));
  EXPECT_FALSE(is_builtin_name("solution"));
  EXPECT_THROW(builtin_target("rms", "fastest"), std::invalid_argument);
  EXPECT_TRUE(runs_on_host(builtin_target("rms", "reference")));
  EXPECT_FALSE(runs_on_host(builtin_target("rms", "naive")));
  ::unsetenv("D2K_IMPL_DIR");
}

// Issue 15: the prepare step got the workload's var axes only, so causal_conv1d's weight [D, W]
// (W const) and w4a16_gemv's qweight [N, KP] (KP an expr) could not be sized, nothing compiled
// before the lockdown, and torch_compile failed every call on the H200.
TEST(WorkloadShapes, CarryConstAndExprAxesAndTheScalarOverrides) {
  for (const char* name : {"causal_conv1d", "w4a16_gemv", "softmax_cross_entropy"}) {
    Diagnostics diag;
    const Task task = load_task(fs::path(D2K_SOURCE_DIR) / "dataset" / name, diag);
    ASSERT_TRUE(diag.ok()) << diag.format();
    ASSERT_FALSE(task.workloads.empty());
    for (const Workload& w : task.workloads) {
      const WorkloadShape s = workload_shape(task.def, w);
      EXPECT_EQ(s.uuid, w.uuid);
      EXPECT_EQ(s.scalars, w.scalars);
      for (const Axis& a : task.def.axes) EXPECT_TRUE(s.axes.count(a.name)) << w.uuid << ": no axis " << a.name;
    }
  }
  Diagnostics diag;
  const Task conv = load_task(fs::path(D2K_SOURCE_DIR) / "dataset" / "causal_conv1d", diag);
  EXPECT_EQ(workload_shape(conv.def, conv.workloads.front()).axes.at("W"), 4);
}

TEST(WorkloadShapes, RoundTripAndNameTheBadEntry) {
  std::vector<WorkloadShape> s{{"a", {{"T", 7}, {"H", 264}}, {{"grad_scale", 0.000244140625}, {"ignore_index", 1}}}, {"b", {}, {}}};
  auto back = shapes_from_json(shapes_to_json(s));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].axes.at("H"), 264);
  // The workload's scalar overrides travel too (torch.compile specialises on them).
  EXPECT_EQ(back[0].scalars.at("grad_scale"), 0.000244140625);
  EXPECT_EQ(back[0].scalars.at("ignore_index"), 1);
  EXPECT_TRUE(back[1].scalars.empty());
  EXPECT_EQ(back[1].uuid, "b");
  try {
    shapes_from_json(nlohmann::json::parse(R"([{"uuid":"a","axes":{}},{"axes":{}}])"));
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("shapes[1]", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace d2k
