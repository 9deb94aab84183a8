// Integer expressions of the data-driven registration API (C API and KernelSpec): launch rules
// ("cdiv(n, BLOCK * VEC)"), shared-memory sizes, key fields and config constraints.
//
// Grammar (C precedence, lowest first): c ? a : b, ||, &&, == !=, < <= > >=, + -, * / %,
// unary - + !, primary = integer literal | identifier | f(args) | ( expr ). Functions:
// cdiv(a, b) (division rounded up), min(a, b), max(a, b), pow2(a) (next power of two, 1 for
// a <= 1). Values are int64; comparisons and && || ! give 0 or 1; / and % truncate as in C.
// Identifiers are resolved when parsing (an unknown name is a parse error listing the known ones),
// so evaluating is a walk over a small node array with values looked up by slot.
// Hostile input is safe: text, nesting and node count are bounded; evaluation checks every
// operation for overflow and division by zero and returns an error instead of undefined
// behaviour. Thread safety: a parsed Expr is immutable; eval() may run on many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ktune::api {

class Expr {
 public:
  static constexpr size_t kMaxText = 4096;
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kMaxNodes = 512;

  // Maps an identifier to its slot (index into eval's values), or -1 when unknown.
  using Resolver = std::function<int(std::string_view name)>;

  // Parses `text`. `what` names the expression in errors ("grid.x"); `known` lists the names the
  // resolver accepts, for the unknown-name message. kInvalidArgument with the column on error.
  static Expected<Expr> parse(std::string_view text, const Resolver& resolve,
                              const std::string& what, const std::string& known);

  // Value over `values` (indexed by slot; must cover every slot the resolver returned).
  // kInvalidArgument on overflow, division by zero, or a negative pow2 argument overflow.
  Expected<int64_t> eval(const int64_t* values) const;
  // eval() without the message: false on any error (hot path).
  bool evalFast(const int64_t* values, int64_t* out) const;

  const std::string& text() const { return text_; }
  // True when the expression reads slot `s`.
  bool uses(int slot) const;
  // The slot when the expression is a variable alone ("n"), else -1.
  int bareSlot() const;

 private:
  struct Node {
    uint8_t op = 0;
    int32_t a = -1, b = -1, c = -1;  // children (node indices)
    int64_t value = 0;               // literal value or variable slot
  };
  friend class ExprParser;
  bool evalNode(int32_t i, const int64_t* v, int64_t* out, const char** err) const;

  std::string text_;
  std::vector<Node> nodes_;
  int32_t root_ = -1;
};

}  // namespace ktune::api
