// d2k pack's rows (src/pack): columns, the starter map, the version hash, and that a task that
// does not validate stops the pack. The Parquet read-back is tests/unit/pack/check_parquet.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pack/pack.h"

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;
using namespace d2k::pack;

namespace {

const fs::path kDataset = fs::path(D2K_SOURCE_DIR) / "dataset";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class PackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("d2k-pack-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  fs::path tmp_;
};

TEST(PackRow, ColumnsInOrderAndNestedPartsAsJson) {
  const ordered_json row = task_row(kDataset / "fused_add_rmsnorm", "cuda", "v1");
  std::vector<std::string> keys;
  for (const auto& [k, v] : row.items()) {
    keys.push_back(k);
    EXPECT_TRUE(v.is_string()) << k;
  }
  ASSERT_EQ(keys.size(), kColumns.size());
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(keys[i], kColumns[i]);
  EXPECT_EQ(row["task_id"], "fused_add_rmsnorm__cuda");
  EXPECT_EQ(row["spec"], slurp(kDataset / "fused_add_rmsnorm/spec.md"));
  const auto starter = ordered_json::parse(row["starter"].get<std::string>());
  EXPECT_EQ(starter["solution.cu"], slurp(kDataset / "fused_add_rmsnorm/starter/cuda/solution.cu"));
  const auto def = ordered_json::parse(slurp(kDataset / "fused_add_rmsnorm/definition.json"));
  EXPECT_EQ(ordered_json::parse(row["definition"].get<std::string>()), def);
  EXPECT_EQ(row["op_type"], def["op_type"]);
  const auto design = ordered_json::parse(slurp(kDataset / "fused_add_rmsnorm/design.json"));
  EXPECT_EQ(ordered_json::parse(row["design_level_2"].get<std::string>()), design["level_2_dataflow_design"]);
  EXPECT_TRUE(ordered_json::parse(row["workloads"].get<std::string>()).is_array());
  EXPECT_THROW(task_row(kDataset / "tpch_q6", "triton", "v1"), std::runtime_error);  // no triton starter
}

TEST_F(PackTest, VersionFollowsContent) {
  fs::copy(kDataset / "fused_add_rmsnorm", tmp_ / "fused_add_rmsnorm", fs::copy_options::recursive);
  const std::string v1 = dataset_version(tmp_);
  EXPECT_EQ(v1.size(), 16u);
  EXPECT_EQ(dataset_version(tmp_), v1);
  std::ofstream(tmp_ / "fused_add_rmsnorm/spec.md", std::ios::app) << " ";
  EXPECT_NE(dataset_version(tmp_), v1);
}

TEST_F(PackTest, OneRowPerTaskWithAStarterPerFramework) {
  const auto tables = pack(kDataset, tmp_, {});
  ASSERT_EQ(tables.size(), kFrameworks.size());
  for (const auto& t : tables) {
    std::size_t expected = 0;
    for (const auto& e : fs::directory_iterator(kDataset))
      if (fs::is_regular_file(e.path() / "definition.json") && fs::is_directory(e.path() / "starter" / t.framework)) ++expected;
    EXPECT_EQ(t.rows, expected) << t.framework;
    std::ifstream in(t.jsonl);
    std::size_t lines = 0;
    for (std::string line; std::getline(in, line); ++lines)
      EXPECT_TRUE(ordered_json::parse(line)["task_id"].get<std::string>().ends_with("__" + t.framework));
    EXPECT_EQ(lines, expected);
  }
}

TEST_F(PackTest, ATaskThatDoesNotValidateStopsThePack) {
  fs::create_directories(tmp_ / "ds");
  fs::copy(kDataset / "fused_add_rmsnorm", tmp_ / "ds/fused_add_rmsnorm", fs::copy_options::recursive);
  fs::copy(kDataset / "design_levels.json", tmp_ / "ds/design_levels.json");
  fs::remove(tmp_ / "ds/fused_add_rmsnorm/rubric.json");
  try {
    pack(tmp_ / "ds", tmp_ / "out", {});
    ADD_FAILURE() << "packed a task without a rubric";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rubric"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp_ / "out/frontier_sol_cuda.jsonl"));
  EXPECT_THROW(pack(kDataset, tmp_ / "out", {"no_such_task"}), std::runtime_error);
}

}  // namespace
