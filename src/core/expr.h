#pragma once
/// One expression language for shapes, constraints and cost formulas.
///
/// Grammar (C-like precedence): literals (integer, float, 1e9), identifiers (axis or scalar
/// names), unary - and !, * / % , + -, < <= > >= , == !=, &&, ||, parentheses, and the
/// functions min(a,b,...), max(a,b,...), ceil_div(a,b), floor(x), ceil(x), log2(x), sqrt(x).
/// Integer arithmetic stays integer (/ truncates toward zero for integers; use a float literal
/// to force float division); mixing promotes to double. Comparisons yield integer 0/1.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace d2k {

/// The value of an expression: an integer or a double.
struct Value {
  bool is_float = false;
  std::int64_t i = 0;
  double f = 0;
  static Value of(std::int64_t v) { return Value{false, v, 0}; }
  static Value of(double v) { return Value{true, 0, v}; }
  double as_double() const { return is_float ? f : static_cast<double>(i); }
  std::int64_t as_int() const { return is_float ? static_cast<std::int64_t>(f) : i; }
  bool truthy() const { return is_float ? f != 0.0 : i != 0; }
};

/// Error with the position in the source text and a message; callers prefix the file and field.
struct ExprError : std::runtime_error {
  std::size_t pos;
  ExprError(const std::string& msg, std::size_t p) : std::runtime_error(msg), pos(p) {}
};

struct ExprNode;

/// A parsed expression. Cheap to copy (shared immutable tree).
class Expr {
 public:
  /// Bounds on the source text and on the tree's height (nesting of parentheses, unary
  /// operators and calls, and chains such as a+b+c): the task files come from contributors,
  /// and parsing and evaluation recurse once per level. The longest expression of the pilot
  /// tasks is ~640 characters and ~12 levels.
  static constexpr std::size_t kMaxLength = 4096;
  static constexpr std::size_t kMaxDepth = 128;

  Expr() = default;
  /// Parses `text`; throws ExprError naming the offending position, or "expression too long" /
  /// "expression too deep (limit N)" beyond the bounds above.
  static Expr parse(const std::string& text);
  /// Evaluates with identifiers resolved from `env`; throws ExprError on an unknown name,
  /// division by zero or a bad function call.
  Value eval(const std::map<std::string, Value>& env) const;
  /// Identifiers the expression refers to (for validation: every one must be an axis or scalar).
  std::vector<std::string> identifiers() const;
  const std::string& text() const { return text_; }

  /// A simple fact about one identifier stated by a top-level `&&` conjunct of this expression:
  /// `N % 8 == 0` (multiple_of 8), `N == 128`, `N <= 4096` / `N < 4097` (at_most 4096),
  /// `N >= 16` / `N > 15` (at_least 16). Hidden-workload drawing uses them to aim its draws.
  struct Fact {
    enum class Kind { multiple_of, equals, at_most, at_least } kind;
    std::string name;
    std::int64_t value;
  };
  std::vector<Fact> facts() const;
  bool empty() const { return !root_; }

 private:
  std::shared_ptr<const ExprNode> root_;
  std::string text_;
};

}  // namespace d2k
