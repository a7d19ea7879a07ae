// The release audit on temporary git repositories with planted secrets, run records, binaries
// and workspaces. Every planted secret is assembled at run time, so this file holds none.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "audit/audit.h"
#include "audit/rules.h"
#include "exec/sha256.h"

namespace fs = std::filesystem;
using namespace d2k::audit;

namespace {

// Token shapes, split so that the source itself matches no pattern.
const std::string kAws = std::string("AKI") + "AIOSFODNN7" + "EXAMPLQ";
const std::string kOpenAi = std::string("sk-") + "proj-" + "Zq8Xv2Lm4Nc7Tb1Wy5Rk9Hd3";
const std::string kAnthropic = std::string("sk-") + "ant-api03-" + "Qw3Er5Ty7Ui9Op1As2Df4Gh6";
const std::string kGithub = std::string("gh") + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8";
const std::string kSlack = std::string("xo") + "xb-" + "1234567890-abcdefghij";
const std::string kPem = std::string("-----BEGIN RSA ") + "PRIVATE KEY-----";
const std::string kRandom = std::string("Tq7Zp2Xw9Lk4") + "Vb8Nm3Rc6Hs1Jd5F";

bool has(const std::vector<Hit>& hits, const std::string& rule, int line = -1) {
  return std::any_of(hits.begin(), hits.end(), [&](const Hit& h) { return h.rule == rule && (line < 0 || h.line == line); });
}

TEST(AuditRules, EachTokenKindFoundOnItsLine) {
  const std::string text = "x = 1\n" + kAws + "\nkey: " + kOpenAi + "\n" + kAnthropic + "\n" + kGithub + "\n" + kSlack +
                           "\n" + kPem + "\nclient_secret = \"" + kRandom + "\"\n";
  const auto hits = scan_secrets(text);
  EXPECT_TRUE(has(hits, "secret.aws-access-key", 2));
  EXPECT_TRUE(has(hits, "secret.openai-key", 3));
  EXPECT_TRUE(has(hits, "secret.anthropic-key", 4));
  EXPECT_FALSE(has(hits, "secret.openai-key", 4));  // an Anthropic key is not also an OpenAI one
  EXPECT_TRUE(has(hits, "secret.github-token", 5));
  EXPECT_TRUE(has(hits, "secret.slack-token", 6));
  EXPECT_TRUE(has(hits, "secret.private-key", 7));
  EXPECT_TRUE(has(hits, "secret.high-entropy", 8));
  for (const auto& h : hits) {
    EXPECT_EQ(h.detail.find(kOpenAi), std::string::npos) << "the report must not repeat the secret";
    EXPECT_EQ(h.detail.find(kRandom), std::string::npos);
  }
}

TEST(AuditRules, OrdinaryCodeIsClean) {
  const std::string text =
      "token_count = \"input_tokens_output_tokens\"\n"
      "api_key = os.environ[\"OPENAI_API_KEY\"]\n"
      "const std::string key = \"level_1_high_level_algorithmic_insights\";\n"
      "sha = \"0123456789abcdef0123456789abcdef\"\n"
      "task-sk-example and ask-me-anything-please-now\n";
  EXPECT_TRUE(scan_secrets(text).empty());
  EXPECT_TRUE(scan_secrets(std::string("\0binary", 7) + kAws).empty());  // binary: not scanned as text
}

TEST(AuditRules, PathsAndBytes) {
  EXPECT_TRUE(has(scan_path("runs/r1/usage.jsonl"), "run-record"));
  EXPECT_TRUE(has(scan_path("out/bench.trace.jsonl"), "run-record"));
  EXPECT_FALSE(has(scan_path("docs/results/bench.trace.jsonl"), "run-record"));
  EXPECT_TRUE(has(scan_path("lib/libfoo.so.1"), "binary.object"));
  EXPECT_TRUE(has(scan_path("a/b.o"), "binary.object"));
  EXPECT_FALSE(has(scan_path("src/solution.cu"), "binary.object"));
  EXPECT_TRUE(has(scan_binary(std::string("\x7f" "ELF\x02", 5), 100), "binary.elf"));
  EXPECT_TRUE(has(scan_binary("abc", kLargeFileBytes + 1), "binary.large"));
  EXPECT_TRUE(scan_binary("abc", kLargeFileBytes).empty());
}

/// A temporary git repository.
class Repo : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("d2k-audit-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    git("init -q -b main");
  }
  void TearDown() override { fs::remove_all(root_); }
  void git(const std::string& args) {
    const std::string cmd = "git -C '" + root_.string() + "' -c user.name=t -c user.email=t@example.com " + args;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  std::string head() {
    const std::string f = (root_ / ".head").string();
    std::system(("git -C '" + root_.string() + "' rev-parse HEAD > '" + f + "'").c_str());
    std::ifstream in(f);
    std::string s;
    in >> s;
    fs::remove(f);
    return s;
  }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << text;
  }
  void commit(const std::string& msg) {
    git("add -A");
    git("commit -q -m '" + msg + "'");
  }
  std::vector<Finding> run(bool history) { return audit_release({root_, history, {}}); }
  fs::path root_;
};

const Finding* find(const std::vector<Finding>& fs_, const std::string& path, const std::string& rule) {
  for (const auto& f : fs_)
    if (f.path == path && f.rule == rule) return &f;
  return nullptr;
}

TEST_F(Repo, KeyInAnOldCommitFoundOnlyWithHistory) {
  write("README.md", "hello\n");
  write("config/settings.py", "debug = True\naws = '" + kAws + "'\n");
  commit("first");
  const std::string first = head();
  fs::remove(root_ / "config/settings.py");
  write("src/main.cpp", "int main() { return 0; }\n");
  commit("second: drop the settings");

  EXPECT_TRUE(run(false).empty());
  const auto h = run(true);
  const Finding* f = find(h, "config/settings.py", "secret.aws-access-key");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->commit, first);
  EXPECT_EQ(f->line, 2);
  EXPECT_EQ(f->format().substr(0, 12 + 1 + 20), first.substr(0, 12) + ":config/settings.py:2");
  EXPECT_EQ(h.size(), 1u);
}

TEST_F(Repo, WorkingTreeFindingsIncludeUntrackedButNotIgnored) {
  write(".gitignore", "d2k.toml\nbuild/\n");
  write("d2k.toml", "[proxy]\nopenai_api_key = \"" + kOpenAi + "\"\n");  // ignored: never published
  write("build/libx.so", "\x7f" "ELF");
  commit("base");
  write("notes.txt", "use " + kAnthropic + "\n");  // untracked, not ignored: would be published
  write("runs/r1/usage.jsonl", "{}\n");
  write("tools/helper", std::string("\x7f" "ELF\x02\x01\x01", 7));
  write("data/big.bin", std::string(kLargeFileBytes + 10, 'x'));
  const auto f = run(false);
  EXPECT_NE(find(f, "notes.txt", "secret.anthropic-key"), nullptr);
  EXPECT_NE(find(f, "runs/r1/usage.jsonl", "run-record"), nullptr);
  EXPECT_NE(find(f, "tools/helper", "binary.elf"), nullptr);
  EXPECT_NE(find(f, "data/big.bin", "binary.large"), nullptr);
  EXPECT_EQ(find(f, "d2k.toml", "secret.openai-key"), nullptr);
  EXPECT_EQ(find(f, "build/libx.so", "binary.object"), nullptr);
}

TEST_F(Repo, WorkspaceWithAChangedSolutionIsFlaggedAPristineOneIsNot) {
  const std::string starter = "// starter\n__global__ void k() {}\n";
  const std::string manifest = "{\"task\":\"t\",\"track\":\"cuda\",\"level\":\"L1\",\"dataset_version\":\"x\",\"files\":{\"solution/solution.cu\":\"" +
                               d2k::sha256_hex(starter) + "\"}}";
  write("example_workspace/t__cuda__L1/manifest.json", manifest);
  write("example_workspace/t__cuda__L1/solution/solution.cu", starter);
  write("leak/t__cuda__L1/manifest.json", manifest);
  write("leak/t__cuda__L1/solution/solution.cu", starter + "// the agent's kernel\n");
  write("leak/t__cuda__L1/solution/extra.cuh", "// more\n");
  commit("workspaces");
  const auto f = run(true);
  EXPECT_EQ(find(f, "example_workspace/t__cuda__L1/solution/solution.cu", "workspace-solution"), nullptr);
  EXPECT_NE(find(f, "leak/t__cuda__L1/solution/solution.cu", "workspace-solution"), nullptr);
  EXPECT_NE(find(f, "leak/t__cuda__L1/solution/extra.cuh", "workspace-solution"), nullptr);
  const auto in_history = std::count_if(f.begin(), f.end(), [](const Finding& x) { return !x.commit.empty(); });
  EXPECT_EQ(in_history, 2);  // the same two, from the commit
}

TEST_F(Repo, AllowlistSilencesKnownSafeHits) {
  write("tests/fixtures/fake_key.txt", kGithub + "\n");
  write("docs/example.md", kGithub + "\n");
  commit("fixtures");
  EXPECT_EQ(run(false).size(), 2u);
  write("config/audit-allowlist.txt", "# test fixtures\ntests/fixtures/* secret.github-token\n");
  const auto f = run(false);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].path, "docs/example.md");
  write("config/audit-allowlist.txt", "docs/* secret.github-token extra\n");
  EXPECT_THROW(run(false), std::runtime_error);
}

TEST_F(Repo, CliExitsNonZeroListingFileLineAndCommit) {
  write("a.txt", "ok\n");
  write("old.env", "X=1\nTOKEN=" + kSlack + "\n");
  commit("one");
  fs::remove(root_ / "old.env");
  commit("two");
  const std::string d2k = std::string(D2K_BINARY_DIR) + "/src/cli/d2k";
  const std::string out = (root_.parent_path() / ("audit-out-" + std::to_string(::getpid()))).string();
  int st = std::system((d2k + " audit release '" + root_.string() + "' > '" + out + "'").c_str());
  EXPECT_EQ(WEXITSTATUS(st), 0);
  st = std::system((d2k + " audit release --history '" + root_.string() + "' > '" + out + "'").c_str());
  EXPECT_EQ(WEXITSTATUS(st), 1);
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find(":old.env:2: secret.slack-token"), std::string::npos) << text;
  EXPECT_EQ(text.find(kSlack), std::string::npos);
  fs::remove(out);
}

}  // namespace
