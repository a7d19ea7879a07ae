#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/expr.h"

namespace d2k {
namespace {

Value eval(const std::string& text, const std::map<std::string, Value>& env = {}) {
  return Expr::parse(text).eval(env);
}
std::int64_t ival(const std::string& text, const std::map<std::string, Value>& env = {}) {
  const Value v = eval(text, env);
  EXPECT_FALSE(v.is_float) << text;
  return v.i;
}
double fval(const std::string& text, const std::map<std::string, Value>& env = {}) {
  const Value v = eval(text, env);
  EXPECT_TRUE(v.is_float) << text;
  return v.f;
}
// Position and message of the ExprError that parsing or evaluating `text` throws.
std::pair<std::size_t, std::string> error_of(const std::string& text, const std::map<std::string, Value>& env = {}) {
  try {
    eval(text, env);
  } catch (const ExprError& e) {
    return {e.pos, e.what()};
  }
  ADD_FAILURE() << "no error for " << text;
  return {0, ""};
}

TEST(Expr, Precedence) {
  EXPECT_EQ(ival("1 + 2 * 3"), 7);
  EXPECT_EQ(ival("(1 + 2) * 3"), 9);
  EXPECT_EQ(ival("10 - 4 - 3"), 3);
  EXPECT_EQ(ival("2 * 3 % 4"), 2);
  EXPECT_EQ(ival("-2 * 3"), -6);
  EXPECT_EQ(ival("!0 + 1"), 2);
  EXPECT_EQ(ival("1 || 0 && 0"), 1);   // && binds tighter than ||
  EXPECT_EQ(ival("1 + 2 < 4 == 1"), 1);  // relational before equality
  EXPECT_EQ(ival("3 - -2"), 5);
}

TEST(Expr, IntegerAndFloat) {
  EXPECT_EQ(ival("7 / 2"), 3);
  EXPECT_EQ(ival("-7 / 2"), -3);  // truncation toward zero, as in C
  EXPECT_EQ(ival("7 % 3"), 1);
  EXPECT_DOUBLE_EQ(fval("7 / 2.0"), 3.5);
  EXPECT_DOUBLE_EQ(fval("2 * 1.5"), 3.0);
  EXPECT_DOUBLE_EQ(fval("1e9"), 1e9);
  EXPECT_DOUBLE_EQ(fval(".5 + 1"), 1.5);
  EXPECT_DOUBLE_EQ(fval("7.5 % 2"), 1.5);
  EXPECT_EQ(ival("T * H", {{"T", Value::of(std::int64_t{3})}, {"H", Value::of(std::int64_t{5})}}), 15);
  EXPECT_DOUBLE_EQ(fval("eps * 2", {{"eps", Value::of(0.25)}}), 0.5);
}

TEST(Expr, Functions) {
  EXPECT_EQ(ival("ceil_div(7, 2)"), 4);
  EXPECT_EQ(ival("ceil_div(8, 2)"), 4);
  EXPECT_EQ(ival("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(ival("ceil_div(7.0, 2)"), 4);
  EXPECT_EQ(ival("min(3, 1, 2)"), 1);
  EXPECT_EQ(ival("max(3, 9, 2, 4)"), 9);
  EXPECT_EQ(ival("min(5)"), 5);
  EXPECT_DOUBLE_EQ(fval("max(1, 2.5)"), 2.5);
  EXPECT_DOUBLE_EQ(fval("min(4, 2.5)"), 2.5);
  EXPECT_EQ(ival("floor(2.7)"), 2);
  EXPECT_EQ(ival("ceil(2.1)"), 3);
  EXPECT_EQ(ival("floor(-2.5)"), -3);
  EXPECT_DOUBLE_EQ(fval("log2(8)"), 3.0);
  EXPECT_DOUBLE_EQ(fval("sqrt(16)"), 4.0);
  EXPECT_EQ(ival("floor(sqrt(17))"), 4);
}

TEST(Expr, Comparisons) {
  EXPECT_EQ(ival("3 >= 3"), 1);
  EXPECT_EQ(ival("3 > 3"), 0);
  EXPECT_EQ(ival("2 != 2"), 0);
  EXPECT_EQ(ival("2 == 2.0"), 1);
  EXPECT_EQ(ival("1 < 1.5"), 1);
  EXPECT_EQ(ival("!(2 <= 1)"), 1);
  EXPECT_EQ(ival("5 % 2 == 1 && 4 % 2 == 0"), 1);
  // Short-circuit: the division is never evaluated when T is 0.
  EXPECT_EQ(ival("T == 0 || 10 / T > 2", {{"T", Value::of(std::int64_t{0})}}), 1);
  EXPECT_EQ(ival("T != 0 && 10 / T > 2", {{"T", Value::of(std::int64_t{0})}}), 0);
}

TEST(Expr, Identifiers) {
  const auto ids = Expr::parse("T * H + ceil_div(T, G) + min(H, 4)").identifiers();
  EXPECT_EQ(ids, (std::vector<std::string>{"T", "H", "G"}));
  EXPECT_TRUE(Expr::parse("3 + 4").identifiers().empty());
}

TEST(Expr, ParseErrorsCarryPositions) {
  auto [p1, m1] = error_of("1 +");
  EXPECT_EQ(p1, 3u);
  EXPECT_NE(m1.find("unexpected end of expression at column 4"), std::string::npos) << m1;
  auto [p2, m2] = error_of("(1 + 2");
  EXPECT_EQ(p2, 6u);
  EXPECT_NE(m2.find("expected ')'"), std::string::npos) << m2;
  auto [p3, m3] = error_of("1 $ 2");
  EXPECT_EQ(p3, 2u);
  EXPECT_NE(m3.find("unexpected character '$'"), std::string::npos) << m3;
  auto [p4, m4] = error_of("2 * foo(1)");
  EXPECT_EQ(p4, 4u);
  EXPECT_NE(m4.find("unknown function 'foo'"), std::string::npos) << m4;
  auto [p5, m5] = error_of("ceil_div(1)");
  EXPECT_EQ(p5, 0u);
  EXPECT_NE(m5.find("ceil_div() takes 2 argument(s), got 1"), std::string::npos) << m5;
  EXPECT_NE(error_of("min()").second.find("at least 1"), std::string::npos);
  EXPECT_NE(error_of("").second.find("empty expression"), std::string::npos);
  EXPECT_EQ(error_of("1 2").first, 2u);
  EXPECT_EQ(error_of("3x").first, 0u);
  EXPECT_NE(error_of("99999999999999999999").second.find("out of range"), std::string::npos);
}

TEST(Expr, EvalErrorsCarryPositions) {
  const std::map<std::string, Value> env = {{"T", Value::of(std::int64_t{4})}};
  auto [p1, m1] = error_of("T + Q", env);
  EXPECT_EQ(p1, 4u);
  EXPECT_NE(m1.find("unknown identifier 'Q' at column 5 in \"T + Q\""), std::string::npos) << m1;
  auto [p2, m2] = error_of("1 / (T - T)", env);
  EXPECT_EQ(p2, 2u);
  EXPECT_NE(m2.find("integer division by zero"), std::string::npos) << m2;
  EXPECT_NE(error_of("T % 0", env).second.find("modulo by zero"), std::string::npos);
  EXPECT_NE(error_of("1.0 / 0", env).second.find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("ceil_div(T, 0)", env).second.find("ceil_div by zero"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775807 + 1").second.find("integer overflow"), std::string::npos);
  EXPECT_NE(error_of("log2(0)").second.find("log2 of non-positive"), std::string::npos);
  EXPECT_NE(error_of("sqrt(-1)").second.find("sqrt of negative"), std::string::npos);
  EXPECT_THROW(Expr().eval(env), ExprError);
}

TEST(Expr, Facts) {
  using K = Expr::Fact::Kind;
  const auto f = Expr::parse("H % 8 == 0 && D == 128 && K <= 64 && 3 < N && M < 100 && 0 == P % 16").facts();
  ASSERT_EQ(f.size(), 6u);
  EXPECT_TRUE(f[0].kind == K::multiple_of && f[0].name == "H" && f[0].value == 8);
  EXPECT_TRUE(f[1].kind == K::equals && f[1].name == "D" && f[1].value == 128);
  EXPECT_TRUE(f[2].kind == K::at_most && f[2].name == "K" && f[2].value == 64);
  EXPECT_TRUE(f[3].kind == K::at_least && f[3].name == "N" && f[3].value == 4);
  EXPECT_TRUE(f[4].kind == K::at_most && f[4].name == "M" && f[4].value == 99);
  EXPECT_TRUE(f[5].kind == K::multiple_of && f[5].name == "P" && f[5].value == 16);
  // A disjunction states nothing certain about either side.
  EXPECT_TRUE(Expr::parse("H % 8 == 0 || H == 4").facts().empty());
}


// Inputs that overflowed the stack before the bounds (parse_binary, parse_unary, eval,
// collect_identifiers): each is now refused with a message, never a crash.
std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t k = 0; k < n; ++k) out += s;
  return out;
}

std::string parse_error(const std::string& text) {
  try {
    Expr::parse(text);
  } catch (const ExprError& e) {
    return e.what();
  }
  return "";
}

TEST(ExprBounds, NestedParenthesesTooDeep) {
  const std::string deep = repeat("(", 6000) + "1" + repeat(")", 6000);
  EXPECT_NE(parse_error(deep).find("expression too long"), std::string::npos);
  const std::string within_length = repeat("(", 1000) + "1" + repeat(")", 1000);
  EXPECT_EQ(parse_error(within_length), fmt::format("expression too deep (limit {})", Expr::kMaxDepth));
  const std::string ok = repeat("(", 50) + "N" + repeat(")", 50);
  EXPECT_EQ(Expr::parse(ok).identifiers(), std::vector<std::string>{"N"});
}

TEST(ExprBounds, UnaryChainTooDeep) {
  EXPECT_NE(parse_error(repeat("-", 30000) + "1").find("expression too long"), std::string::npos);
  EXPECT_NE(parse_error(repeat("-", 3000) + "1").find("expression too deep"), std::string::npos);
  EXPECT_NE(parse_error(repeat("!-", 1000) + "1").find("expression too deep"), std::string::npos);
  EXPECT_EQ(ival(repeat("- ", 10) + "3"), 3);
}

TEST(ExprBounds, LongSumTooDeep) {
  // A left-deep chain: the parser loops, but evaluation recursed once per term.
  EXPECT_NE(parse_error("N" + repeat(" + N", 30000)).find("expression too long"), std::string::npos);
  EXPECT_NE(parse_error("N" + repeat("+N", 1500)).find("expression too deep"), std::string::npos);
  EXPECT_NE(parse_error(repeat("min(", 200) + "1" + repeat(")", 200)).find("expression too deep"), std::string::npos);
  EXPECT_EQ(ival("1" + repeat("+1", 100)), 101);
}

TEST(ExprBounds, MillionTermSumRefusedBeforeParsing) {
  std::string huge(1, 'a');
  huge += repeat("+a", 1000000);
  EXPECT_NE(parse_error(huge).find("expression too long (2000001 characters, limit 4096)"), std::string::npos);
}

}  // namespace
}  // namespace d2k
