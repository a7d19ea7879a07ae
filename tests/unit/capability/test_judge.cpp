// The judge backends against a local fake server: both dialects, retry with backoff, errors
// that are not retried, the key from the environment, the response cache, the repair retry.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "capability/judge.h"
#include "capability/prompt.h"
#include "capability/verdict.h"
#include "unit/capability/fake_judge.h"

namespace d2k::capability {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(D2K_SOURCE_DIR) + "/tests/fixtures/judge/" + name; }

fs::path temp_dir(const std::string& tag) {
  fs::path d = fs::temp_directory_path() / ("d2k-judge-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

JudgeConfig config_for(const test::FakeJudge& fake, JudgeApi api) {
  ::setenv("D2K_TEST_JUDGE_KEY", "test-key", 1);
  JudgeConfig c;
  c.api = api;
  c.base_url = api == JudgeApi::openai ? fake.openai_url() : fake.anthropic_url();
  c.model = "fake-model";
  c.api_key_env = "D2K_TEST_JUDGE_KEY";
  c.retries = 3;
  c.backoff_s = 0.01;
  c.backoff_max_s = 0.05;
  c.timeout_s = 10;
  return c;
}

class BothDialects : public ::testing::TestWithParam<JudgeApi> {};

TEST_P(BothDialects, RetriesA429ThenReturnsTheCompletion) {
  test::FakeJudge fake(fixture("flaky.json"));
  auto judge = make_http_judge(config_for(fake, GetParam()));
  const std::string text = judge->complete("grade this <<<CODE x CODE>>>", 0);
  EXPECT_EQ(fake.auth_failures(), 0) << "the dialect's authentication headers were not sent";
  EXPECT_EQ(fake.requests(), 2);
  EXPECT_EQ(judge->calls(), 2u);
  std::string err;
  auto v = parse_verdict(text, err);
  ASSERT_TRUE(v) << err << ": " << text;
  EXPECT_EQ(v->score, 75);
}

TEST_P(BothDialects, RetriesARequestThatTimedOut) {
  test::FakeJudge fake(fixture("slow.json"));
  JudgeConfig c = config_for(fake, GetParam());
  c.timeout_s = 1;
  auto judge = make_http_judge(c);
  std::string err;
  auto v = parse_verdict(judge->complete("p", 0), err);
  ASSERT_TRUE(v) << err;
  EXPECT_EQ(v->score, 100);
  EXPECT_EQ(judge->calls(), 2u);
}

TEST_P(BothDialects, GivesUpAfterTheConfiguredRetriesOn5xx) {
  test::FakeJudge fake(fixture("unavailable.json"));
  auto judge = make_http_judge(config_for(fake, GetParam()));
  try {
    judge->complete("p", 0);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("HTTP 503"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 attempt(s)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(fake.requests(), 4);  // 1 + retries
}

TEST_P(BothDialects, DoesNotRetryAClientError) {
  test::FakeJudge fake(fixture("bad_request.json"));
  auto judge = make_http_judge(config_for(fake, GetParam()));
  EXPECT_THROW(judge->complete("p", 0), std::runtime_error);
  EXPECT_EQ(fake.requests(), 1);
}

TEST_P(BothDialects, RepairsAMalformedAnswerOnce) {
  test::FakeJudge fake(fixture("malformed.json"));
  auto judge = make_http_judge(config_for(fake, GetParam()));
  const AnchorOrder order = balanced_order(0);
  const JudgedSample s = judge_once(*judge, "grade <<<DESIGN d DESIGN>>>", 0, order, "{{error}} / {{previous}} / {{prompt}}");
  ASSERT_TRUE(s.verdict) << s.error;
  EXPECT_TRUE(s.repaired);
  EXPECT_EQ(s.verdict->score, 50);
  EXPECT_EQ(s.position, order.position_of(50));
  ASSERT_EQ(fake.prompts().size(), 2u);
  // The repair request quotes the refused answer and says why it was refused.
  EXPECT_NE(fake.prompts()[1].find("I think this deserves a 75"), std::string::npos);
  EXPECT_NE(fake.prompts()[1].find("not one JSON object"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Judge, BothDialects, ::testing::Values(JudgeApi::openai, JudgeApi::anthropic),
                         [](const auto& info) { return info.param == JudgeApi::openai ? "openai" : "anthropic"; });

TEST(Judge, AnAnswerStillMalformedAfterTheRepairHasNoVerdict) {
  test::FakeJudge fake(fixture("always_malformed.json"));
  auto judge = make_http_judge(config_for(fake, JudgeApi::openai));
  const JudgedSample s = judge_once(*judge, "p", 0, balanced_order(0), "{{error}}{{previous}}{{prompt}}");
  EXPECT_FALSE(s.verdict);
  EXPECT_NE(s.error.find("must be one of 0, 25, 50, 75, 100"), std::string::npos) << s.error;
  EXPECT_EQ(fake.requests(), 2);  // the question and one repair, no more
}

TEST(Judge, AMissingKeyNamesTheVariable) {
  test::FakeJudge fake(fixture("flaky.json"));
  JudgeConfig c = config_for(fake, JudgeApi::openai);
  c.api_key_env = "D2K_TEST_NO_SUCH_KEY_VAR";
  ::unsetenv("D2K_TEST_NO_SUCH_KEY_VAR");
  auto judge = make_http_judge(c);
  try {
    judge->complete("p", 0);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("D2K_TEST_NO_SUCH_KEY_VAR"), std::string::npos);
  }
  EXPECT_EQ(fake.requests(), 0);
}

TEST(Judge, TheCacheAnswersARepeatWithoutACall) {
  test::FakeJudge fake(fixture("pilots.json"));
  const fs::path dir = temp_dir("cache");
  JudgeConfig c = config_for(fake, JudgeApi::anthropic);
  c.cache_dir = dir;
  const std::string prompt = "grade <<<CODE __global__ void k() {} CODE>>>";
  std::string first;
  {
    auto judge = make_judge(c);
    first = judge->complete(prompt, 0);
    EXPECT_EQ(judge->calls(), 1u);
  }
  {
    auto judge = make_judge(c);  // a new run: only the files persist
    EXPECT_EQ(judge->complete(prompt, 0), first);
    EXPECT_EQ(judge->calls(), 0u);
    EXPECT_EQ(fake.requests(), 1);
    judge->complete(prompt, 1);  // another self-consistency sample is another key
    EXPECT_EQ(fake.requests(), 2);
  }
  JudgeConfig other = c;
  other.model = "another-model";
  make_judge(other)->complete(prompt, 0);
  EXPECT_EQ(fake.requests(), 3) << "the model is part of the key";
  fs::remove_all(dir);
}

TEST(Judge, CacheKeySeparatesItsFields) {
  EXPECT_NE(judge_cache_key("ab", "c", 0), judge_cache_key("a", "bc", 0));
  EXPECT_NE(judge_cache_key("p", "m", 0), judge_cache_key("p", "m", 1));
  EXPECT_EQ(judge_cache_key("p", "m", 2), judge_cache_key("p", "m", 2));
}

TEST(JudgeConfig, ReadsTheExampleFile) {
  const JudgeConfig c = load_judge_config(std::string(D2K_SOURCE_DIR) + "/config/judge.example.toml");
  EXPECT_EQ(c.api, JudgeApi::openai);
  EXPECT_EQ(c.temperature, 0.0);
  EXPECT_EQ(c.api_key_env, "OPENAI_API_KEY");
  EXPECT_GT(c.retries, 0);
  EXPECT_FALSE(c.cache_dir.empty());
  EXPECT_EQ(c.base_url.back(), '1');  // trailing slashes removed, /v1 kept
}

TEST(JudgeConfig, NamesTheFileAndFieldOfAMistake) {
  const fs::path dir = temp_dir("cfg");
  auto write = [&](const std::string& body) {
    std::ofstream(dir / "j.toml") << body;
    return dir / "j.toml";
  };
  auto message = [&](const std::string& body) {
    try {
      load_judge_config(write(body));
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("[judge]\napi='openai'\nmodel='m'\n").find("judge.base_url: missing"), std::string::npos);
  EXPECT_NE(message("[judge]\napi='gemini'\nbase_url='u'\nmodel='m'\n").find("judge.api"), std::string::npos);
  EXPECT_NE(message("[judge]\napi='openai'\nbase_url='u'\nmodel='m'\nretries='3'\n").find("judge.retries: expected an integer"),
            std::string::npos);
  EXPECT_NE(message("[judge]\napi='openai'\nbase_url='u'\nmodel='m'\ntemprature=0\n").find("judge.temprature: unknown key"),
            std::string::npos);
  EXPECT_NE(message("[judge\n").find("j.toml:"), std::string::npos);
  const JudgeConfig c = load_judge_config(write("[judge]\napi='anthropic'\nbase_url='http://h/'\nmodel='m'\ncache_dir='c'\n"));
  EXPECT_EQ(c.api_key_env, "ANTHROPIC_API_KEY");
  EXPECT_EQ(c.base_url, "http://h");
  EXPECT_EQ(c.cache_dir, dir / "c");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace d2k::capability
