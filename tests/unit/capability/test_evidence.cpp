// SASS parsing, opcode prefixes, design items against machine code, the audit's kernel set, the
// contradiction flags; and the real disassembly of the pilots' built experts and naives.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <fstream>

#include "capability/evidence.h"
#include "capability/library.h"
#include "capability/sass.h"
#include "capability/scorer.h"
#include "core/task_loader.h"

namespace d2k::capability {
namespace {

namespace fs = std::filesystem;

// cuobjdump of a large library takes seconds on a shared machine: each library once per binary.
const LibraryEvidence& disassembled(const fs::path& so) {
  static std::map<fs::path, LibraryEvidence> done;
  auto it = done.find(so);
  if (it == done.end()) it = done.emplace(so, disassemble_library(so)).first;
  return it->second;
}


const char* kListing = R"SASS(
Fatbin elf code:
================
arch = sm_90a

	code for sm_90a
		Function : _ZN6expert4gemmEv
	.headerflags	@"EF_CUDA_ACCELERATORS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                         /* 0x00000a00ff017b82 */
                                                                                  /* 0x000fe20000000800 */
        /*0010*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT ;  /* 0x01e00000081879f0 */
        /*0020*/               @P0 UTMALDG.3D [UR8], [UR4] ;                      /* 0x0000000008007fb4 */
        /*0030*/              @!P1 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;     /* 0x000000040204c981 */
        /*0040*/                   EXIT ;                                         /* 0x000000000000794d */
		..........

		Function : _ZN6expert4tailEv
        /*0000*/                   LDG.E.1280X R4, desc[UR4][R2.64] ;
        /*0010*/                   LDG.E R4, desc[UR4][R2.64] ;
        /*0020*/                   STL [R1], R4 ;
        /*0030*/                   EXIT ;
)SASS";

TEST(Sass, ParsesKernelsAndOpcodesWithoutPredicates) {
  const SassListing l = parse_sass(kListing);
  ASSERT_EQ(l.kernels.size(), 2u);
  EXPECT_EQ(l.kernels[0].name, "_ZN6expert4gemmEv");
  EXPECT_EQ(l.kernels[0].opcodes.at("HGMMA.64x128x16.F32.BF16"), 1);
  EXPECT_EQ(l.kernels[0].opcodes.at("UTMALDG.3D"), 1);
  EXPECT_EQ(l.kernels[0].opcodes.at("LDG.E.128.CONSTANT"), 1);
  EXPECT_EQ(l.kernels[0].opcodes.count("/*"), 0u);
  EXPECT_EQ(l.total.at("EXIT"), 2);
  EXPECT_EQ(l.total.at("LDC"), 1);
  std::int64_t n = 0;
  for (const auto& [op, c] : l.total) n += c;
  EXPECT_EQ(n, 9);  // encoding-only lines and headers are not instructions
}

TEST(Sass, PrefixesMatchAtModifierBoundaries) {
  EXPECT_TRUE(opcode_matches("LDG.E.128.CONSTANT", "LDG.E.128"));
  EXPECT_TRUE(opcode_matches("LDG.E.128", "LDG.E.128"));
  EXPECT_FALSE(opcode_matches("LDG.E.1280X", "LDG.E.128"));
  EXPECT_TRUE(opcode_matches("HGMMA.64x128x16.F32.BF16", "HGMMA"));
  EXPECT_FALSE(opcode_matches("ATOMS.ADD", "ATOM"));
  EXPECT_FALSE(opcode_matches("REDUX.SUM", "RED"));
  EXPECT_FALSE(opcode_matches("LDG", ""));
  const SassListing l = parse_sass(kListing);
  EXPECT_EQ(count_matching(l.total, "LDG.E.128"), 1);
  EXPECT_EQ(count_matching(l.total, "LDG"), 3);
}

Design design_with(std::vector<std::pair<std::string, DesignEvidence>> items) {
  Design d;
  for (auto& [id, ev] : items) {
    DesignItem it;
    it.id = id;
    it.evidence = ev;
    d.level[id[1] - '1'].push_back(it);
  }
  d.level[0].push_back(DesignItem{"L1.no_signature", "s", "r", "c", {}});
  return d;
}

TEST(Evidence, BuiltNotBuiltUnknownAndRan) {
  const Design d = design_with({{"L3.wgmma", {{"HGMMA"}, {}, {}}},
                                {"L3.cp_async", {{"LDGSTS"}, {}, {}}},
                                {"L2.no_spill", {{}, {"LDL", "STL"}, {}}},
                                {"L3.vec", {{"LDG.E.128"}, {}, {}}}});
  const SassListing l = parse_sass(kListing);
  const std::vector<std::string> ran = {"expert::gemm()"};  // the audit's demangled form
  const auto ev = collect_evidence(d, l, ran);
  ASSERT_EQ(ev.size(), 4u) << "items without a signature are not listed";
  auto get = [&](const std::string& id) {
    for (const auto& e : ev)
      if (e.id == id) return e;
    ADD_FAILURE() << id;
    return ItemEvidence{};
  };
  EXPECT_EQ(get("L3.wgmma").status, "built");
  EXPECT_EQ(get("L3.wgmma").found, std::vector<std::string>{"HGMMA.64x128x16.F32.BF16 x1"});
  EXPECT_EQ(get("L3.wgmma").ran, true);
  EXPECT_EQ(get("L3.wgmma").ran_in, std::vector<std::string>{"_ZN6expert4gemmEv"});
  EXPECT_EQ(get("L3.cp_async").status, "not_built");
  EXPECT_FALSE(get("L3.cp_async").ran.has_value());
  EXPECT_EQ(get("L2.no_spill").status, "not_built");
  EXPECT_EQ(get("L2.no_spill").forbidden, std::vector<std::string>{"STL x1"});
  EXPECT_EQ(get("L2.no_spill").level, 2);
  EXPECT_EQ(get("L3.vec").status, "built");

  const auto unknown = collect_evidence(d, std::nullopt, std::nullopt);
  for (const auto& e : unknown) EXPECT_EQ(e.status, "unknown") << e.id;

  // A template kernel demangles with its return type; the audit's base name still matches.
  SassListing t;
  t.kernels.push_back({"_ZN11muon_expert19update_from_x_tilesILb0EEEvPKtlPKfPtPfiifff", {{"HGMMA.64x128x16.F32.BF16", 2}}});
  t.total = t.kernels[0].opcodes;
  for (const char* name : {"muon_expert::update_from_x_tiles<false>",
                           "void muon_expert::update_from_x_tiles<false>(const unsigned short *, long, const float *, "
                           "unsigned short *, float *, int, int, float, float, float)"}) {
    const auto tv = collect_evidence(d, t, std::vector<std::string>{name});
    for (const auto& e : tv)
      if (e.id == "L3.wgmma") {
        EXPECT_EQ(e.ran, true) << name;
      }
  }
  const auto other = collect_evidence(d, t, std::vector<std::string>{"muon_expert::update_from_x_tiles<true>"});
  for (const auto& e : other)
    if (e.id == "L3.wgmma") {
      EXPECT_EQ(e.ran, false) << "another instantiation is another kernel";
    }

  // A built item whose kernels never ran (the audit saw only the tail kernel).
  const auto not_run = collect_evidence(d, l, std::vector<std::string>{"_ZN6expert4tailEv"});
  for (const auto& e : not_run)
    if (e.id == "L3.wgmma") {
      EXPECT_EQ(e.ran, false);
    }
}

TEST(Evidence, FlagsOnlyLevelsTheJudgeCredits) {
  const Design d = design_with({{"L3.wgmma", {{"HGMMA"}, {}, {}}}, {"L3.cp_async", {{"LDGSTS"}, {}, {}}}});
  const auto ev = collect_evidence(d, parse_sass(kListing), std::nullopt);
  EXPECT_TRUE(contradiction_flags(3, 50, ev).empty()) << "a level the judge does not credit is not contradicted";
  EXPECT_TRUE(contradiction_flags(3, std::nullopt, ev).empty());
  EXPECT_TRUE(contradiction_flags(2, 100, ev).empty()) << "no item of level 2 has a signature";
  const auto f = contradiction_flags(3, 75, ev);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].find("L3.cp_async"), std::string::npos) << f[0];
  EXPECT_NE(f[0].find("no LDGSTS"), std::string::npos) << f[0];
  const auto not_run = collect_evidence(d, parse_sass(kListing), std::vector<std::string>{"_ZN6expert4tailEv"});
  const auto g = contradiction_flags(3, 100, not_run);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_NE(g[0].find("never executed"), std::string::npos) << g[0];
}

TEST(Evidence, KernelsThatRanComeFromTheSolutionsTraces) {
  const fs::path f = fs::temp_directory_path() / ("d2k-check-" + std::to_string(::getpid()) + ".json");
  std::ofstream(f) << R"({"target":"expert","performance":{"kernels":["expert_k"]}})" << "\n"
                   << "not json\n"
                   << R"({"target":"solution","status":"INCORRECT_NUMERICAL"})" << "\n"
                   << R"({"target":"solution","performance":{"kernels":["k2","k1"]}})" << "\n"
                   << R"({"target":"solution","performance":{"kernels":["k1"]}})" << "\n";
  const auto k = kernels_that_ran(f);
  ASSERT_TRUE(k);
  EXPECT_EQ(*k, (std::vector<std::string>{"k1", "k2"}));
  std::ofstream(f) << R"({"target":"solution","status":"SKIPPED"})" << "\n";
  EXPECT_FALSE(kernels_that_ran(f)) << "no kernel set: did not run on a GPU";
  fs::remove(f);
  EXPECT_FALSE(kernels_that_ran(f));
}

TEST(Evidence, PromptTextSaysWhatWasFound) {
  const Design d = design_with({{"L3.wgmma", {{"HGMMA"}, {}, {}}}, {"L3.cp_async", {{"LDGSTS"}, {}, {}}}});
  const auto ev = collect_evidence(d, parse_sass(kListing), std::nullopt);
  const std::string t = evidence_for_prompt(ev, 3, "");
  EXPECT_NE(t.find("L3.wgmma [SASS: one of HGMMA]: present in the built library: HGMMA.64x128x16.F32.BF16 x1"), std::string::npos) << t;
  EXPECT_NE(t.find("L3.cp_async [SASS: one of LDGSTS]: NOT present in the built library (no LDGSTS)"), std::string::npos) << t;
  EXPECT_NE(evidence_for_prompt(ev, 1, "").find("no design item of this level"), std::string::npos);
  const auto unk = collect_evidence(d, std::nullopt, std::nullopt);
  EXPECT_NE(evidence_for_prompt(unk, 3, "not built (--no-build)").find("unknown (not built (--no-build))"), std::string::npos);
}

// The pilots as built here (sm_90a): the signatures in their design.json hold for the expert and
// are absent from the naive baseline (docs/results/sass-evidence-*.md has the listing).
struct PilotCase {
  std::string task, item;
  bool expert_built, naive_built;
};

class PilotSass : public ::testing::TestWithParam<PilotCase> {};

TEST_P(PilotSass, ExpertHasTheSignatureNaiveDoesNot) {
  const PilotCase c = GetParam();
  ASSERT_TRUE(find_cuobjdump()) << "no cuobjdump: run scripts/setup.sh (it unpacks the nvidia-cuda-cuobjdump wheel)";
  Diagnostics diag;
  const Task t = load_task(fs::path(D2K_SOURCE_DIR) / "dataset" / c.task, diag);
  ASSERT_TRUE(t.design);
  const fs::path impl = fs::path(D2K_BINARY_DIR) / "impl" / c.task;
  for (const auto& [impl_name, want] : {std::pair{"expert", c.expert_built}, std::pair{"naive", c.naive_built}}) {
    const LibraryEvidence& lib = disassembled(impl / (std::string(impl_name) + ".so"));
    ASSERT_TRUE(lib.listing) << impl_name << ": " << lib.note;
    const auto ev = collect_evidence(*t.design, lib.listing, std::nullopt);
    bool seen = false;
    for (const auto& e : ev)
      if (e.id == c.item) {
        seen = true;
        EXPECT_EQ(e.status, want ? "built" : "not_built") << c.task << " " << impl_name << " " << e.id;
      }
    EXPECT_TRUE(seen) << c.item << " has no evidence entry in " << c.task << "/design.json";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pilots, PilotSass,
    ::testing::Values(PilotCase{"muon_optimizer_step", "L3.wgmma_tma_warp_specialised", true, false},
                      PilotCase{"fused_add_rmsnorm", "L3.vector_16B_access", true, false},
                      PilotCase{"fused_add_rmsnorm", "L3.rsqrt_and_reciprocal_H", true, false},
                      PilotCase{"fused_add_rmsnorm", "L2.hierarchical_row_reduction", true, false},
                      PilotCase{"topk_topp_mask", "L3.shared_histogram_atomics", true, false},
                      PilotCase{"topk_topp_mask", "L3.streaming_vector_access", true, false}),
    [](const auto& info) { return info.param.task + "_" + std::to_string(info.index); });

TEST(Sass, ANonCudaFileIsANoteNotACrash) {
  if (!find_cuobjdump()) GTEST_SKIP() << "no cuobjdump";
  const fs::path f = fs::temp_directory_path() / ("d2k-notcuda-" + std::to_string(::getpid()) + ".so");
  std::ofstream(f) << "\x7f" "ELF garbage";
  const LibraryEvidence lib = disassemble_library(f);
  EXPECT_FALSE(lib.listing);
  EXPECT_FALSE(lib.note.empty());
  fs::remove(f);
  EXPECT_NE(disassemble_library(f).note.find("no library"), std::string::npos);
}

}  // namespace
}  // namespace d2k::capability
