// The row-wise families' tuning session and the helpers verify compares rows with (declared in
// ops/rowwise_session.h).
#include "ops/rowwise_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ktune::rowwise_ops {

namespace {

// Up to 64 row indices spread over [0, rows), first and last included.
std::vector<int64_t> sampleRows(int64_t rows) {
  const int64_t n = std::min<int64_t>(rows, 64);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(n == 1 ? 0 : i * (rows - 1) / (n - 1));
  return out;
}

constexpr auto kSessionGap = std::chrono::seconds(5);

}  // namespace

Status readRow(Backend& b, DevicePtr base, int64_t row, int64_t stride, int64_t n, size_t es,
               std::vector<unsigned char>& out) {
  const size_t off = out.size();
  out.resize(off + size_t(n) * es);
  return b.copyToHost(out.data() + off, base + DevicePtr(row * stride) * es, size_t(n) * es);
}

Status beginOrRestore(FamilyCtx& ctx, const std::string& id, int64_t rows, size_t es,
                      const std::vector<std::tuple<DevicePtr, int64_t, int64_t>>& inputs,
                      DevicePtr weight, int64_t wcols,
                      const std::vector<std::pair<DevicePtr, size_t>>& aliased,
                      StreamHandle stream) {
  Backend& b = ctx.tuner->backend();
  const auto now = std::chrono::steady_clock::now();
  if (ctx.session && ctx.session->id == id && now - ctx.session->last < kSessionGap) {
    for (const auto& bk : ctx.session->backups)
      KTUNE_RETURN_IF_ERROR(b.copyDeviceToDevice(bk.dst, bk.copy, bk.bytes, stream));
    ctx.session->last = now;
    return Status::Ok();
  }
  ctx.dropSession();
  KTUNE_RETURN_IF_ERROR(b.synchronize(stream));
  auto s = std::make_unique<Session>();
  s->id = id;
  s->last = now;
  s->rows = sampleRows(rows);
  for (int64_t r : s->rows) {
    std::vector<unsigned char> buf;
    for (const auto& [base, stride, cols] : inputs)
      KTUNE_RETURN_IF_ERROR(readRow(b, base, r, stride, cols, es, buf));
    s->in_rows.push_back(std::move(buf));
  }
  if (weight) KTUNE_RETURN_IF_ERROR(readRow(b, weight, 0, 0, wcols, es, s->weight));
  for (const auto& [dst, bytes] : aliased) {
    auto copy = b.alloc(bytes);
    if (!copy.ok()) {
      for (auto& bk : s->backups) (void)b.free(bk.copy);
      return copy.status().withContext("backing up an in-place input for tuning");
    }
    s->backups.push_back({dst, *copy, bytes});
    KTUNE_RETURN_IF_ERROR(b.copyDeviceToDevice(*copy, dst, bytes, stream));
  }
  ctx.session = std::move(s);
  return Status::Ok();
}

void merge(VerifyResult& into, const VerifyResult& r) {
  if (!r.ok && into.ok) {
    into.first_bad = into.checked + r.first_bad;
    into.first_bad_out = r.first_bad_out;
    into.first_bad_ref = r.first_bad_ref;
  }
  into.ok = into.ok && r.ok;
  into.checked += r.checked;
  into.mismatches += r.mismatches;
  into.nans += r.nans;
  into.max_abs_error = std::max(into.max_abs_error, r.max_abs_error);
  into.max_rel_error = std::max(into.max_rel_error, r.max_rel_error);
  into.tol = r.tol;
}

VerifyResult compareRow(const std::vector<unsigned char>& got, DType t, const std::vector<double>& ref,
                        Tolerance tol) {
  double scale = 1.0;
  for (double v : ref) scale = std::max(scale, std::fabs(v));
  tol.atol *= scale;  // outputs of O(max |ref|): compare absolutely near zero
  return compareHost(got.data(), t, ref.data(), int64_t(ref.size()), tol);
}

}  // namespace ktune::rowwise_ops
