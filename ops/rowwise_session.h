// Internal to the row-wise ops (ops/rowwise*.cc): a family's tuning session (the inputs as they
// were before the first tuning run, kept to verify against and to restore in-place inputs) and
// the frame verify reads sampled rows through. The families' hooks (rowwise.cc) use them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "autotune/verifier.h"
#include "ops/rowwise.h"
#include "templates/rowwise.h"

namespace ktune::rowwise_ops {

namespace rw = rowwise;

// Tuning-session state of one family: the inputs as they were before the first tuning run
// (sampled rows on the host for verification, device backups of inputs an in-place call
// overwrites). A new session starts when the problem's buffers change or after a pause.
struct Session {
  std::string id;
  std::chrono::steady_clock::time_point last;
  std::vector<int64_t> rows;
  std::vector<std::vector<unsigned char>> in_rows;   // per sampled row: inputs (x | r or x)
  std::vector<unsigned char> weight;
  struct Backup {
    DevicePtr dst = 0, copy = 0;
    size_t bytes = 0;
  };
  std::vector<Backup> backups;
};

struct FamilyCtx {
  Engine* tuner = nullptr;
  std::mutex mu;
  std::unique_ptr<Session> session;

  ~FamilyCtx() { dropSession(); }
  void dropSession() {
    if (session && tuner) {
      for (auto& b : session->backups) (void)tuner->backend().free(b.copy);
    }
    session.reset();
  }
};

// Appends row `row` of the [.., n] view at `base` (row stride `stride` elements) to `out`.
Status readRow(Backend& b, DevicePtr base, int64_t row, int64_t stride, int64_t n, size_t es,
               std::vector<unsigned char>& out);

// Starts a session (snapshot) or, within one, restores in-place inputs from the backups.
// `inputs`: (base, stride, cols) per input whose sampled rows are kept; `aliased`: input regions
// an output overwrites.
Status beginOrRestore(FamilyCtx& ctx, const std::string& id, int64_t rows, size_t es,
                      const std::vector<std::tuple<DevicePtr, int64_t, int64_t>>& inputs,
                      DevicePtr weight, int64_t wcols,
                      const std::vector<std::pair<DevicePtr, size_t>>& aliased,
                      StreamHandle stream);

// Adds r's counts to `into`, keeping the first mismatch.
void merge(VerifyResult& into, const VerifyResult& r);

// One output row against its float64 reference (absolute tolerance scaled by max |ref|).
VerifyResult compareRow(const std::vector<unsigned char>& got, DType t, const std::vector<double>& ref,
                        Tolerance tol);

// The same problem as one contiguous row: the reference runs row by row.
inline rw::RmsNormProblem oneRow(rw::RmsNormProblem p) {
  p.rows = 1;
  p.x_stride = p.y_stride = p.r_stride = p.ro_stride = 0;
  return p;
}
inline rw::SiluMulProblem oneRow(rw::SiluMulProblem p) {
  p.rows = 1;
  p.x_stride = p.out_stride = 0;
  return p;
}

// What verify reads a problem with: the kernel's view, its strides and element size, and the
// view as one contiguous row (oneRow).
template <class A>
struct RowView {
  explicit RowView(const A& a)
      : p(toProblem(a)), st(rw::kernelStrides(p)), es(rw::sizeOf(p.dtype)), one(oneRow(p)) {}
  decltype(toProblem(std::declval<const A&>())) p;
  decltype(rw::kernelStrides(p)) st;
  size_t es;
  decltype(p) one;
};

// verify's frame: with the context locked and stream `s` finished, each sampled row's input from
// the session's snapshot (`id` must be this problem's), as doubles, is handed to
// check(session, i, input, total), which compares the kernel's output row i with the reference.
template <class Check>
Expected<VerifyResult> verifySampledRows(FamilyCtx& ctx, const std::string& id, const char* op,
                                         rw::RowDType dt, StreamHandle s, Check check) {
  std::lock_guard<std::mutex> lk(ctx.mu);
  KTUNE_RETURN_IF_ERROR(ctx.tuner->backend().synchronize(s));
  if (!ctx.session || ctx.session->id != id)
    return Status::Internal(std::string(op) + " verify: no input snapshot (pre_run did not run)");
  const size_t es = rw::sizeOf(dt);
  VerifyResult total;
  for (size_t i = 0; i < ctx.session->rows.size(); ++i) {
    const auto& raw = ctx.session->in_rows[i];
    const auto in = rw::unpack(dt, raw.data(), raw.size() / es);
    KTUNE_RETURN_IF_ERROR(check(*ctx.session, i, in, total));
  }
  return total;
}

}  // namespace ktune::rowwise_ops
