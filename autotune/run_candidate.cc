#include "autotune/run_candidate.h"

#include "base/fs.h"

namespace ktune {
namespace detail {

void fail(Cand& c, const Status& s) {
  c.live = false;
  c.r.status = s.ok() ? Code::kInternal : s.code();
  c.r.reason = s.message();
  c.r.date = isoUtcNow();
}

bool persistentFailure(const CandidateResult& r) {
  if (r.status == Code::kOk) return false;
  if (r.reason.rfind("pruned", 0) == 0 || rejectedAsSlower(r)) return false;
  return r.status == Code::kCompileError || r.status == Code::kOutOfResources ||
         r.status == Code::kLaunchError || r.status == Code::kDeviceFault ||
         r.status == Code::kWrongResult || r.status == Code::kTimeout;
}

}  // namespace detail
}  // namespace ktune
