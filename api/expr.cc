#include "api/expr.h"

#include <cctype>
#include <cstdint>
#include <limits>

namespace ktune::api {
namespace {

enum Op : uint8_t {
  kLit, kVar, kNeg, kNot, kAdd, kSub, kMul, kDiv, kMod, kLt, kLe, kGt, kGe, kEq, kNe,
  kAnd, kOr, kCond, kCdiv, kMin, kMax, kPow2,
};

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();

}  // namespace

// Recursive descent over the grammar in expr.h; one instance per parse.
class ExprParser {
 public:
  ExprParser(std::string_view t, const Expr::Resolver& r, const std::string& what,
             const std::string& known, Expr* e)
      : t_(t), resolve_(r), what_(what), known_(known), e_(e) {}

  Status run() {
    if (t_.size() > Expr::kMaxText) return fail("longer than " + std::to_string(Expr::kMaxText) + " characters");
    int32_t root = -1;
    KTUNE_RETURN_IF_ERROR(cond(&root, 0));
    skipSpace();
    if (pos_ < t_.size()) return fail(std::string("unexpected '") + t_[pos_] + "'");
    e_->root_ = root;
    return Status::Ok();
  }

 private:
  Status fail(const std::string& why) const {
    return Status::InvalidArgument(what_ + " '" + std::string(t_.substr(0, 200)) + "': " + why +
                                   " (at column " + std::to_string(pos_ + 1) + ")");
  }
  void skipSpace() {
    while (pos_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skipSpace();
    if (t_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }
  // Next token is `tok` but not the start of a longer operator (e.g. '<' vs '<=').
  bool eatOp(char c, char not_next1 = 0, char not_next2 = 0) {
    skipSpace();
    if (pos_ >= t_.size() || t_[pos_] != c) return false;
    char n = pos_ + 1 < t_.size() ? t_[pos_ + 1] : 0;
    if (n != 0 && (n == not_next1 || n == not_next2)) return false;
    ++pos_;
    return true;
  }
  Status node(uint8_t op, int32_t a, int32_t b, int32_t c, int64_t value, int32_t* out) {
    if (e_->nodes_.size() >= Expr::kMaxNodes)
      return fail("more than " + std::to_string(Expr::kMaxNodes) + " terms");
    Expr::Node n;
    n.op = op;
    n.a = a;
    n.b = b;
    n.c = c;
    n.value = value;
    e_->nodes_.push_back(n);
    *out = static_cast<int32_t>(e_->nodes_.size() - 1);
    return Status::Ok();
  }
  Status deeper(int depth) const {
    if (depth > Expr::kMaxDepth) return fail("nested deeper than " + std::to_string(Expr::kMaxDepth));
    return Status::Ok();
  }

  Status cond(int32_t* out, int depth) {
    KTUNE_RETURN_IF_ERROR(deeper(depth));
    int32_t c = -1;
    KTUNE_RETURN_IF_ERROR(binary(&c, depth));
    if (!eat("?")) {
      *out = c;
      return Status::Ok();
    }
    int32_t a = -1, b = -1;
    KTUNE_RETURN_IF_ERROR(cond(&a, depth + 1));
    if (!eat(":")) return fail("expected ':'");
    KTUNE_RETURN_IF_ERROR(cond(&b, depth + 1));
    return node(kCond, a, b, c, 0, out);
  }
  // The binary operators by level, loosest first; every level is left-associative and takes its
  // operands from the next one (the last level's from unary). "<=" is tried before "<".
  struct BinaryOp {
    std::string_view tok;
    uint8_t op;
  };
  static constexpr int kLevels = 6;
  static constexpr BinaryOp kBinaryOps[kLevels][4] = {
      {{"||", kOr}},
      {{"&&", kAnd}},
      {{"==", kEq}, {"!=", kNe}},
      {{"<=", kLe}, {">=", kGe}, {"<", kLt}, {">", kGt}},
      {{"+", kAdd}, {"-", kSub}},
      {{"*", kMul}, {"/", kDiv}, {"%", kMod}},
  };
  bool eatBinary(int lvl, uint8_t* op) {
    for (const BinaryOp& b : kBinaryOps[lvl]) {
      if (!b.tok.empty() && eat(b.tok)) {
        *op = b.op;
        return true;
      }
    }
    return false;
  }
  Status binary(int32_t* out, int depth, int lvl = 0) {
    if (lvl == kLevels) return unary(out, depth);
    KTUNE_RETURN_IF_ERROR(binary(out, depth, lvl + 1));
    for (uint8_t op; eatBinary(lvl, &op);) {
      int32_t rhs = -1;
      KTUNE_RETURN_IF_ERROR(binary(&rhs, depth, lvl + 1));
      KTUNE_RETURN_IF_ERROR(node(op, *out, rhs, -1, 0, out));
    }
    return Status::Ok();
  }
  Status unary(int32_t* out, int depth) {
    KTUNE_RETURN_IF_ERROR(deeper(depth));
    if (eatOp('-')) {
      int32_t a = -1;
      KTUNE_RETURN_IF_ERROR(unary(&a, depth + 1));
      return node(kNeg, a, -1, -1, 0, out);
    }
    if (eatOp('+')) return unary(out, depth + 1);
    if (eatOp('!', '=')) {
      int32_t a = -1;
      KTUNE_RETURN_IF_ERROR(unary(&a, depth + 1));
      return node(kNot, a, -1, -1, 0, out);
    }
    return primary(out, depth);
  }
  Status primary(int32_t* out, int depth) {
    skipSpace();
    if (pos_ >= t_.size()) return fail("unexpected end");
    char c = t_[pos_];
    if (c == '(') {
      ++pos_;
      KTUNE_RETURN_IF_ERROR(cond(out, depth + 1));
      if (!eat(")")) return fail("expected ')'");
      return Status::Ok();
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return literal(out);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return name(out, depth);
    return fail(std::string("unexpected '") + c + "'");
  }
  Status literal(int32_t* out) {
    int64_t v = 0;
    while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, t_[pos_] - '0', &v))
        return fail("integer literal does not fit in 64 bits");
      ++pos_;
    }
    if (pos_ < t_.size() && (std::isalpha(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_'))
      return fail("a number cannot be followed by a letter");
    return node(kLit, -1, -1, -1, v, out);
  }
  Status name(int32_t* out, int depth) {
    size_t start = pos_;
    while (pos_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_'))
      ++pos_;
    std::string_view id = t_.substr(start, pos_ - start);
    skipSpace();
    if (pos_ < t_.size() && t_[pos_] == '(') return call(id, out, depth);
    int slot = resolve_ ? resolve_(id) : -1;
    if (slot < 0) {
      pos_ = start;
      return fail("unknown name '" + std::string(id) + "' (known: " + known_ + ")");
    }
    return node(kVar, -1, -1, -1, slot, out);
  }
  Status call(std::string_view fn, int32_t* out, int depth) {
    uint8_t op;
    int arity = 2;
    if (fn == "cdiv") op = kCdiv;
    else if (fn == "min") op = kMin;
    else if (fn == "max") op = kMax;
    else if (fn == "pow2") op = kPow2, arity = 1;
    else return fail("unknown function '" + std::string(fn) + "' (known: cdiv, min, max, pow2)");
    ++pos_;  // '('
    int32_t args[2] = {-1, -1};
    for (int i = 0; i < arity; ++i) {
      if (i > 0 && !eat(",")) return fail(std::string(fn) + " takes " + std::to_string(arity) + " arguments");
      KTUNE_RETURN_IF_ERROR(cond(&args[i], depth + 1));
    }
    if (!eat(")")) return fail("expected ')' after the arguments of " + std::string(fn));
    return node(op, args[0], args[1], -1, 0, out);
  }

  std::string_view t_;
  size_t pos_ = 0;
  const Expr::Resolver& resolve_;
  const std::string& what_;
  const std::string& known_;
  Expr* e_;
};

Expected<Expr> Expr::parse(std::string_view text, const Resolver& resolve, const std::string& what,
                           const std::string& known) {
  Expr e;
  e.text_ = std::string(text.substr(0, kMaxText + 1));
  ExprParser p(text, resolve, what, known, &e);
  KTUNE_RETURN_IF_ERROR(p.run());
  return e;
}

bool Expr::uses(int slot) const {
  for (const Node& n : nodes_) {
    if (n.op == kVar && n.value == slot) return true;
  }
  return false;
}

int Expr::bareSlot() const {
  return nodes_.size() == 1 && nodes_[0].op == kVar ? static_cast<int>(nodes_[0].value) : -1;
}

namespace {
// Division rounded toward +infinity; b != 0 and not (kMin64 / -1), checked by the caller.
int64_t ceilDivChecked(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0))) ++q;
  return q;
}
bool divChecks(int64_t a, int64_t b, const char** err) {
  if (b == 0) return *err = "division by zero", false;
  if (a == kMin64 && b == -1) return *err = "integer overflow", false;
  return true;
}
}  // namespace

bool Expr::evalNode(int32_t i, const int64_t* v, int64_t* out, const char** err) const {
  const Node& n = nodes_[static_cast<size_t>(i)];
  int64_t a = 0, b = 0;
  switch (n.op) {
    case kLit: *out = n.value; return true;
    case kVar: *out = v[n.value]; return true;
    case kAnd:
      if (!evalNode(n.a, v, &a, err)) return false;
      if (!a) return *out = 0, true;
      if (!evalNode(n.b, v, &b, err)) return false;
      return *out = b != 0, true;
    case kOr:
      if (!evalNode(n.a, v, &a, err)) return false;
      if (a) return *out = 1, true;
      if (!evalNode(n.b, v, &b, err)) return false;
      return *out = b != 0, true;
    case kCond:
      if (!evalNode(n.c, v, &a, err)) return false;
      return evalNode(a ? n.a : n.b, v, out, err);
    default: break;
  }
  if (!evalNode(n.a, v, &a, err)) return false;
  if (n.b >= 0 && !evalNode(n.b, v, &b, err)) return false;
  bool ovf = false;
  switch (n.op) {
    case kNeg: ovf = __builtin_sub_overflow(int64_t{0}, a, out); break;
    case kNot: *out = !a; break;
    case kAdd: ovf = __builtin_add_overflow(a, b, out); break;
    case kSub: ovf = __builtin_sub_overflow(a, b, out); break;
    case kMul: ovf = __builtin_mul_overflow(a, b, out); break;
    case kDiv: if (!divChecks(a, b, err)) return false; *out = a / b; break;
    case kMod: if (!divChecks(a, b, err)) return false; *out = a % b; break;
    case kCdiv: if (!divChecks(a, b, err)) return false; *out = ceilDivChecked(a, b); break;
    case kLt: *out = a < b; break;
    case kLe: *out = a <= b; break;
    case kGt: *out = a > b; break;
    case kGe: *out = a >= b; break;
    case kEq: *out = a == b; break;
    case kNe: *out = a != b; break;
    case kMin: *out = a < b ? a : b; break;
    case kMax: *out = a > b ? a : b; break;
    case kPow2: {
      if (a > (int64_t{1} << 62)) return *err = "pow2 argument too large", false;
      int64_t p = 1;
      while (p < a) p <<= 1;
      *out = p;
      break;
    }
    default: return *err = "bad expression node", false;
  }
  if (ovf) return *err = "integer overflow", false;
  return true;
}

bool Expr::evalFast(const int64_t* values, int64_t* out) const {
  const char* err = nullptr;
  return root_ >= 0 && evalNode(root_, values, out, &err);
}

Expected<int64_t> Expr::eval(const int64_t* values) const {
  if (root_ < 0) return Status::InvalidArgument("empty expression");
  const char* err = "error";
  int64_t out = 0;
  if (!evalNode(root_, values, &out, &err))
    return Status::InvalidArgument("'" + text_ + "': " + err);
  return out;
}

}  // namespace ktune::api
