#include "ops/tune_args.h"

#include <cmath>
#include <string>

#include "base/dtype.h"
#include "ops/gemm.h"
#include "templates/gemm.h"

namespace ktune {
namespace {

using Json = nlohmann::json;

constexpr int64_t kMaxRows = int64_t(1) << 31;

Status bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("field \"" + field + "\" " + why);
}

// An optional integer field in [lo, hi]; `fallback` when absent.
Expected<int64_t> intArg(const Json& j, const char* f, int64_t fallback, int64_t lo, int64_t hi) {
  auto it = j.find(f);
  if (it == j.end()) return fallback;
  if (!it->is_number_integer()) return bad(f, "must be an integer, got " + it->dump());
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi))
    return bad(f, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                      it->dump());
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi)
    return bad(f, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                      it->dump());
  return v;
}

// A row stride: 0 (contiguous rows) or at least the row's width.
Expected<int64_t> strideArg(const Json& j, const char* f, int64_t width) {
  KTUNE_ASSIGN_OR_RETURN(int64_t s, intArg(j, f, 0, 0, kMaxRows));
  if (s != 0 && s < width)
    return bad(f, "must be 0 (contiguous) or at least the row width " + std::to_string(width) +
                      ", got " + std::to_string(s));
  return s ? s : width;
}

// The row-wise ops' scalar fields (the GEMM's are checked by gemmShapeFromJson).
Status typeChecks(const Json& j) {
  for (const char* f : {"eps"}) {
    auto it = j.find(f);
    if (it == j.end()) continue;
    if (!it->is_number()) return bad(f, "must be a number, got " + it->dump());
    if (!std::isfinite(it->get<double>()) || std::fabs(it->get<double>()) > 3.0e38)
      return bad(f, "must be a finite float, got " + it->dump());
  }
  for (const char* f : {"weight", "residual"}) {
    auto it = j.find(f);
    if (it != j.end() && !it->is_boolean()) return bad(f, "must be true or false, got " + it->dump());
  }
  for (const char* f : {"dtype"}) {
    auto it = j.find(f);
    if (it != j.end() && !it->is_string()) return bad(f, "must be a string, got " + it->dump());
  }
  if (auto it = j.find("dtype"); it != j.end()) {
    auto d = parseDType(it->get<std::string>());
    if (!d.ok()) return bad("dtype", d.status().message());
  }
  return Status::Ok();
}

Status checkBytes(double bytes, const char* what) {
  if (bytes > double(kMaxTuneItemBytes))
    return Status::InvalidArgument(std::string(what) + " problem needs " +
                                   std::to_string(int64_t(bytes / double(1 << 20))) +
                                   " MiB of buffers, more than the limit of " +
                                   std::to_string(kMaxTuneItemBytes >> 20) +
                                   " MiB for a problem re-created from a recorded key");
  return Status::Ok();
}

// Row-wise ops: rmsnorm (rows x cols) and silu_mul (rows x 2d in, rows x d out).
Status checkRowwise(const Json& j, bool silu) {
  KTUNE_RETURN_IF_ERROR(typeChecks(j));
  const double es = double(sizeOf(parseDType(j.value("dtype", std::string("bf16"))).value()));
  // A missing size is make_problem's to refuse (a key recorded without its args); what is
  // present is checked, and the memory once the sizes are known.
  KTUNE_ASSIGN_OR_RETURN(int64_t rows, intArg(j, "rows", 1, 1, kMaxRows));
  if (silu) {
    KTUNE_ASSIGN_OR_RETURN(int64_t d, intArg(j, "d", 1, 1, int64_t(1) << 30));
    KTUNE_ASSIGN_OR_RETURN(int64_t xs, strideArg(j, "x_stride", 2 * d));
    KTUNE_ASSIGN_OR_RETURN(int64_t os, strideArg(j, "out_stride", d));
    return checkBytes(double(rows) * double(xs + os) * es, "silu_mul");
  }
  KTUNE_ASSIGN_OR_RETURN(int64_t cols, intArg(j, "cols", 1, 1, kMaxRows));
  KTUNE_ASSIGN_OR_RETURN(int64_t xs, strideArg(j, "x_stride", cols));
  KTUNE_ASSIGN_OR_RETURN(int64_t ys, strideArg(j, "y_stride", cols));
  const double residual = j.value("residual", false) ? 2.0 * double(cols) : 0.0;
  return checkBytes(double(rows) * (double(xs + ys) + residual) * es + double(cols) * es,
                    "rmsnorm");
}

Status checkGemm(const Json& j) {
  KTUNE_ASSIGN_OR_RETURN(gemm::GemmShape s, gemmShapeFromJson(j.dump()));
  const double ab = double(sizeOf(dtypeOf(s.ab))), c = double(sizeOf(dtypeOf(s.c)));
  return checkBytes(double(gemm::storedRowsA(s)) * double(s.lda) * ab +
                        double(gemm::storedRowsB(s)) * double(s.ldb) * ab +
                        double(s.m) * double(s.ldc) * c,
                    "GEMM");
}

// True for `op` itself and its per-dtype families ("rmsnorm", "rmsnorm_bf16", ...).
bool isOp(const std::string& family, const std::string& op) {
  if (family == op) return true;
  for (const char* dt : {"_bf16", "_f16", "_f32"})
    if (family == op + dt) return true;
  return false;
}

}  // namespace

Status checkBuiltinTuneArgs(const std::string& family, const Json& args) {
  if (!args.is_object()) return Status::InvalidArgument("args must be a JSON object");
  if (family == "gemm") return checkGemm(args);
  if (isOp(family, "rmsnorm")) return checkRowwise(args, false);
  if (isOp(family, "silu_mul")) return checkRowwise(args, true);
  return Status::Ok();
}

Expected<TuneItem> parseBuiltinTuneItem(std::string_view line) {
  return parseTuneItem(line, checkBuiltinTuneArgs);
}

}  // namespace ktune
