#include "core/expr.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace d2k {

struct ExprNode {
  enum class Kind { int_lit, float_lit, ident, unary, binary, call };
  Kind kind;
  std::size_t pos = 0;  // where the node starts in the text (0-based)
  std::int64_t i = 0;
  double f = 0;
  std::string name;  // identifier, function name or operator
  std::size_t depth = 1;  // height of the subtree: bounded by Expr::kMaxDepth at parse time
  std::vector<std::shared_ptr<const ExprNode>> args;
};

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

[[noreturn]] void fail(const std::string& text, const std::string& msg, std::size_t pos) {
  throw ExprError(fmt::format("{} at column {} in \"{}\"", msg, pos + 1, text), pos);
}

// Parsing, evaluation and the tree's destructor recurse once per level: a bounded height keeps
// every one of them within a small, fixed stack whatever the input.
[[noreturn]] void fail_depth(std::size_t pos) {
  throw ExprError(fmt::format("expression too deep (limit {})", Expr::kMaxDepth), pos);
}

// Sets the node's height from its children; refuses a tree taller than Expr::kMaxDepth.
void set_depth(ExprNode& n) {
  std::size_t d = 0;
  for (const auto& a : n.args) d = std::max(d, a->depth);
  n.depth = d + 1;
  if (n.depth > Expr::kMaxDepth) fail_depth(n.pos);
}

struct Token {
  enum class Kind { number, ident, op, end } kind;
  std::size_t pos;
  std::string text;
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  std::size_t p = 0;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_ident_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  while (p < s.size()) {
    const char c = s[p];
    if (std::isspace(static_cast<unsigned char>(c))) { ++p; continue; }
    const std::size_t start = p;
    if (is_digit(c) || (c == '.' && p + 1 < s.size() && is_digit(s[p + 1]))) {
      while (p < s.size() && is_digit(s[p])) ++p;
      if (p < s.size() && s[p] == '.') { ++p; while (p < s.size() && is_digit(s[p])) ++p; }
      if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
        std::size_t q = p + 1;
        if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
        if (q >= s.size() || !is_digit(s[q])) fail(s, "malformed exponent in number", p);
        p = q;
        while (p < s.size() && is_digit(s[p])) ++p;
      }
      if (p < s.size() && is_ident_start(s[p])) fail(s, "malformed number", start);
      out.push_back({Token::Kind::number, start, s.substr(start, p - start)});
    } else if (is_ident_start(c)) {
      while (p < s.size() && (std::isalnum(static_cast<unsigned char>(s[p])) || s[p] == '_')) ++p;
      out.push_back({Token::Kind::ident, start, s.substr(start, p - start)});
    } else {
      static const char* const kTwo[] = {"<=", ">=", "==", "!=", "&&", "||"};
      bool two = false;
      for (const char* t : kTwo)
        if (s.compare(p, 2, t) == 0) { two = true; break; }
      if (two) {
        out.push_back({Token::Kind::op, start, s.substr(p, 2)});
        p += 2;
      } else if (std::strchr("+-*/%<>!(),", c) != nullptr) {
        out.push_back({Token::Kind::op, start, std::string(1, c)});
        ++p;
      } else {
        fail(s, fmt::format("unexpected character '{}'", c), p);
      }
    }
  }
  out.push_back({Token::Kind::end, s.size(), ""});
  return out;
}

struct FunctionInfo {
  const char* name;
  std::size_t min_args, max_args;  // max 0 = variadic
};
constexpr FunctionInfo kFunctions[] = {
    {"min", 1, 0}, {"max", 1, 0}, {"ceil_div", 2, 2}, {"floor", 1, 1},
    {"ceil", 1, 1}, {"log2", 1, 1}, {"sqrt", 1, 1},
};

// Recursive descent, one function per precedence level (lowest first).
class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text), toks_(tokenize(text)) {}

  // Counts the recursion of parse_binary(0) (parentheses, call arguments) and of unary chains,
  // which add parser frames without adding tree height.
  struct Nest {
    Parser& p;
    explicit Nest(Parser& parser) : p(parser) {
      if (++p.nest_ > Expr::kMaxDepth) fail_depth(p.peek().pos);
    }
    ~Nest() { --p.nest_; }
  };

  NodePtr parse() {
    if (peek().kind == Token::Kind::end) fail(text_, "empty expression", 0);
    NodePtr n = parse_binary(0);
    if (peek().kind != Token::Kind::end) fail(text_, fmt::format("unexpected '{}'", peek().text), peek().pos);
    return n;
  }

 private:
  const Token& peek() const { return toks_[k_]; }
  bool is_op(const char* op) const { return peek().kind == Token::Kind::op && peek().text == op; }
  void expect(const char* op) {
    if (!is_op(op)) {
      const std::string got = peek().kind == Token::Kind::end ? "end of expression" : "'" + peek().text + "'";
      fail(text_, fmt::format("expected '{}' but found {}", op, got), peek().pos);
    }
    ++k_;
  }

  // Binary operator levels, lowest precedence first.
  static const std::vector<std::vector<std::string>>& levels() {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"||"}, {"&&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"+", "-"}, {"*", "/", "%"}};
    return kLevels;
  }

  NodePtr parse_binary(std::size_t level) {
    if (level == levels().size()) return parse_unary();
    NodePtr lhs = parse_binary(level + 1);
    for (;;) {
      const Token& t = peek();
      if (t.kind != Token::Kind::op) return lhs;
      const auto& ops = levels()[level];
      if (std::find(ops.begin(), ops.end(), t.text) == ops.end()) return lhs;
      ++k_;
      auto n = std::make_shared<ExprNode>();
      n->kind = ExprNode::Kind::binary;
      n->pos = t.pos;
      n->name = t.text;
      n->args = {lhs, parse_binary(level + 1)};
      set_depth(*n);
      lhs = n;
    }
  }

  NodePtr parse_unary() {
    if (is_op("-") || is_op("!") || is_op("+")) {
      const Token t = peek();
      const Nest nest(*this);
      ++k_;
      NodePtr operand = parse_unary();
      if (t.text == "+") return operand;
      auto n = std::make_shared<ExprNode>();
      n->kind = ExprNode::Kind::unary;
      n->pos = t.pos;
      n->name = t.text;
      n->args = {operand};
      set_depth(*n);
      return n;
    }
    return parse_primary();
  }

  NodePtr parse_primary() {
    const Token t = peek();
    auto n = std::make_shared<ExprNode>();
    n->pos = t.pos;
    switch (t.kind) {
      case Token::Kind::number: {
        ++k_;
        const bool is_float = t.text.find_first_of(".eE") != std::string::npos;
        if (is_float) {
          n->kind = ExprNode::Kind::float_lit;
          n->f = std::strtod(t.text.c_str(), nullptr);
        } else {
          n->kind = ExprNode::Kind::int_lit;
          auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), n->i);
          if (ec != std::errc()) fail(text_, "integer literal out of range", t.pos);
        }
        return n;
      }
      case Token::Kind::ident: {
        ++k_;
        n->name = t.text;
        if (!is_op("(")) {
          n->kind = ExprNode::Kind::ident;
          return n;
        }
        const FunctionInfo* fn = nullptr;
        for (const auto& f : kFunctions)
          if (t.text == f.name) fn = &f;
        if (!fn) fail(text_, fmt::format("unknown function '{}'", t.text), t.pos);
        ++k_;  // '('
        n->kind = ExprNode::Kind::call;
        const Nest nest(*this);
        if (!is_op(")")) {
          n->args.push_back(parse_binary(0));
          while (is_op(",")) {
            ++k_;
            n->args.push_back(parse_binary(0));
          }
        }
        expect(")");
        if (n->args.size() < fn->min_args || (fn->max_args && n->args.size() > fn->max_args)) {
          const std::string want = fn->max_args == 0 ? fmt::format("at least {}", fn->min_args)
                                   : fn->min_args == fn->max_args ? fmt::format("{}", fn->min_args)
                                                                  : fmt::format("{} to {}", fn->min_args, fn->max_args);
          fail(text_, fmt::format("{}() takes {} argument(s), got {}", t.text, want, n->args.size()), t.pos);
        }
        set_depth(*n);
        return n;
      }
      case Token::Kind::op:
        if (t.text == "(") {
          const Nest nest(*this);
          ++k_;
          NodePtr inner = parse_binary(0);
          expect(")");
          return inner;
        }
        fail(text_, fmt::format("unexpected '{}'", t.text), t.pos);
      case Token::Kind::end:
        fail(text_, "unexpected end of expression", t.pos);
    }
    fail(text_, "unexpected token", t.pos);
  }

  const std::string& text_;
  std::vector<Token> toks_;
  std::size_t k_ = 0;
  std::size_t nest_ = 0;
};


class Evaluator {
 public:
  Evaluator(const std::string& text, const std::map<std::string, Value>& env) : text_(text), env_(env) {}

  Value eval(const ExprNode& n) const {
    switch (n.kind) {
      case ExprNode::Kind::int_lit: return Value::of(n.i);
      case ExprNode::Kind::float_lit: return Value::of(n.f);
      case ExprNode::Kind::ident: {
        auto it = env_.find(n.name);
        if (it == env_.end()) fail(text_, fmt::format("unknown identifier '{}'", n.name), n.pos);
        return it->second;
      }
      case ExprNode::Kind::unary: {
        const Value v = eval(*n.args[0]);
        if (n.name == "!") return Value::of(std::int64_t{v.truthy() ? 0 : 1});
        if (v.is_float) return Value::of(-v.f);
        if (v.i == std::numeric_limits<std::int64_t>::min()) fail(text_, "integer overflow in negation", n.pos);
        return Value::of(-v.i);
      }
      case ExprNode::Kind::binary: return binary(n);
      case ExprNode::Kind::call: return call(n);
    }
    fail(text_, "bad expression node", n.pos);
  }

 private:
  Value binary(const ExprNode& n) const {
    const std::string& op = n.name;
    if (op == "&&" || op == "||") {  // short-circuit, so `B == 0 || N / B > 2` is safe
      const bool l = eval(*n.args[0]).truthy();
      if (op == "&&" && !l) return Value::of(std::int64_t{0});
      if (op == "||" && l) return Value::of(std::int64_t{1});
      return Value::of(std::int64_t{eval(*n.args[1]).truthy() ? 1 : 0});
    }
    const Value a = eval(*n.args[0]);
    const Value b = eval(*n.args[1]);
    const bool ints = !a.is_float && !b.is_float;
    if (op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=") {
      int c = 0;  // -1, 0, 1 (NaN compares unequal and unordered: every ordering is false)
      bool unordered = false;
      if (ints) {
        c = a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
      } else {
        const double x = a.as_double(), y = b.as_double();
        unordered = std::isnan(x) || std::isnan(y);
        c = x < y ? -1 : x > y ? 1 : 0;
      }
      bool r = false;
      if (op == "==") r = !unordered && c == 0;
      else if (op == "!=") r = unordered || c != 0;
      else if (unordered) r = false;
      else if (op == "<") r = c < 0;
      else if (op == "<=") r = c <= 0;
      else if (op == ">") r = c > 0;
      else r = c >= 0;
      return Value::of(std::int64_t{r ? 1 : 0});
    }
    if (ints) {
      std::int64_t r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(a.i, b.i, &r);
      else if (op == "-") overflow = __builtin_sub_overflow(a.i, b.i, &r);
      else if (op == "*") overflow = __builtin_mul_overflow(a.i, b.i, &r);
      else {
        if (b.i == 0) fail(text_, op == "/" ? "integer division by zero" : "integer modulo by zero", n.pos);
        if (a.i == std::numeric_limits<std::int64_t>::min() && b.i == -1) overflow = true;
        else r = op == "/" ? a.i / b.i : a.i % b.i;
      }
      if (overflow) fail(text_, fmt::format("integer overflow in '{}' (use a float literal such as 2.0 for large values)", op), n.pos);
      return Value::of(r);
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value::of(x + y);
    if (op == "-") return Value::of(x - y);
    if (op == "*") return Value::of(x * y);
    if (y == 0.0) fail(text_, op == "/" ? "division by zero" : "modulo by zero", n.pos);
    return Value::of(op == "/" ? x / y : std::fmod(x, y));
  }

  std::int64_t to_int(double v, const ExprNode& n) const {
    if (!std::isfinite(v) || std::fabs(v) >= 9.2e18)
      fail(text_, fmt::format("{}() result {} is not a representable integer", n.name, v), n.pos);
    return static_cast<std::int64_t>(v);
  }

  Value call(const ExprNode& n) const {
    std::vector<Value> v;
    for (const auto& a : n.args) v.push_back(eval(*a));
    const std::string& f = n.name;
    if (f == "min" || f == "max") {
      Value best = v[0];
      for (std::size_t k = 1; k < v.size(); ++k) {
        const Value& x = v[k];
        if (!best.is_float && !x.is_float) {
          if ((f == "min") ? x.i < best.i : x.i > best.i) best = x;
        } else {
          const double bd = best.as_double(), xd = x.as_double();
          best = Value::of((f == "min") ? std::fmin(bd, xd) : std::fmax(bd, xd));
        }
      }
      // Any float argument makes the result a float, as in arithmetic.
      bool any_float = false;
      for (const auto& x : v) any_float = any_float || x.is_float;
      return any_float ? Value::of(best.as_double()) : best;
    }
    if (f == "ceil_div") {
      if (!v[0].is_float && !v[1].is_float) {
        const std::int64_t a = v[0].i, b = v[1].i;
        if (b == 0) fail(text_, "ceil_div by zero", n.pos);
        std::int64_t q = a / b;
        if (a % b != 0 && ((a < 0) == (b < 0))) ++q;  // C division truncates; round up instead
        return Value::of(q);
      }
      if (v[1].as_double() == 0.0) fail(text_, "ceil_div by zero", n.pos);
      return Value::of(to_int(std::ceil(v[0].as_double() / v[1].as_double()), n));
    }
    if (f == "floor" || f == "ceil") {  // integer results: usable as sizes
      if (!v[0].is_float) return v[0];
      return Value::of(to_int(f == "floor" ? std::floor(v[0].f) : std::ceil(v[0].f), n));
    }
    const double x = v[0].as_double();
    if (f == "log2") {
      if (!(x > 0)) fail(text_, fmt::format("log2 of non-positive value {}", x), n.pos);
      return Value::of(std::log2(x));
    }
    if (f == "sqrt") {
      if (!(x >= 0)) fail(text_, fmt::format("sqrt of negative value {}", x), n.pos);
      return Value::of(std::sqrt(x));
    }
    fail(text_, fmt::format("unknown function '{}'", f), n.pos);
  }

  const std::string& text_;
  const std::map<std::string, Value>& env_;
};

void collect_identifiers(const ExprNode& n, std::vector<std::string>& out) {
  if (n.kind == ExprNode::Kind::ident && std::find(out.begin(), out.end(), n.name) == out.end())
    out.push_back(n.name);
  for (const auto& a : n.args) collect_identifiers(*a, out);
}

bool is_ident(const ExprNode& n) { return n.kind == ExprNode::Kind::ident; }
bool is_int(const ExprNode& n) { return n.kind == ExprNode::Kind::int_lit; }

void collect_facts(const ExprNode& n, std::vector<Expr::Fact>& out) {
  using Kind = Expr::Fact::Kind;
  if (n.kind != ExprNode::Kind::binary) return;
  if (n.name == "&&") {
    collect_facts(*n.args[0], out);
    collect_facts(*n.args[1], out);
    return;
  }
  const ExprNode* l = n.args[0].get();
  const ExprNode* r = n.args[1].get();
  std::string_view op = n.name;
  // `N % c == 0` or `0 == N % c`
  if (op == "==") {
    const ExprNode* mod = is_int(*r) && r->i == 0 ? l : is_int(*l) && l->i == 0 ? r : nullptr;
    if (mod && mod->kind == ExprNode::Kind::binary && mod->name == "%" && is_ident(*mod->args[0]) &&
        is_int(*mod->args[1]) && mod->args[1]->i > 0) {
      out.push_back({Kind::multiple_of, mod->args[0]->name, mod->args[1]->i});
      return;
    }
  }
  if (is_int(*l) && is_ident(*r)) {  // literal on the left: mirror the comparison
    std::swap(l, r);
    if (op == "<") op = ">"; else if (op == ">") op = "<";
    else if (op == "<=") op = ">="; else if (op == ">=") op = "<=";
  }
  if (!is_ident(*l) || !is_int(*r)) return;
  const std::int64_t c = r->i;
  if (op == "==") out.push_back({Kind::equals, l->name, c});
  else if (op == "<=") out.push_back({Kind::at_most, l->name, c});
  else if (op == "<" && c > std::numeric_limits<std::int64_t>::min()) out.push_back({Kind::at_most, l->name, c - 1});
  else if (op == ">=") out.push_back({Kind::at_least, l->name, c});
  else if (op == ">" && c < std::numeric_limits<std::int64_t>::max()) out.push_back({Kind::at_least, l->name, c + 1});
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  if (text.size() > kMaxLength)
    throw ExprError(fmt::format("expression too long ({} characters, limit {})", text.size(), kMaxLength), kMaxLength);
  Expr e;
  e.text_ = text;
  e.root_ = Parser(text).parse();
  return e;
}

Value Expr::eval(const std::map<std::string, Value>& env) const {
  if (!root_) throw ExprError("evaluating an empty expression", 0);
  return Evaluator(text_, env).eval(*root_);
}

std::vector<std::string> Expr::identifiers() const {
  std::vector<std::string> out;
  if (root_) collect_identifiers(*root_, out);
  return out;
}

std::vector<Expr::Fact> Expr::facts() const {
  std::vector<Fact> out;
  if (root_) collect_facts(*root_, out);
  return out;
}

}  // namespace d2k
