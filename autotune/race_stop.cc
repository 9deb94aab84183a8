// The guided race's stop rule (race_stop.h).
#include "autotune/race_stop.h"

#include "base/format.h"
#include "base/timeline.h"

namespace ktune::detail {

namespace {

bool hasNamedValue(const std::vector<std::string>& classes) {
  for (const std::string& c : classes)
    if (c.rfind("value:", 0) == 0) return true;
  return false;
}

// The fastest time of the prior's order raced so far (not picks, not owed, not a trigger), other
// than position `except`'s; 0 when none was timed.
double priorBest(const StopRule& s, size_t except) {
  double best = 0;
  for (size_t j = 0; j < s.cv.ms.size(); ++j)
    if (j != except && s.cv.taken[j] && !s.picked[j] && !s.owed[j] && !s.trigger[j] &&
        s.cv.ms[j] > 0 && (best <= 0 || s.cv.ms[j] < best))
      best = s.cv.ms[j];
  return best;
}

// How many of the prior's order were raced (timed, rejected or failed) before this batch (`got`:
// what finished together is not raced before one another: a warm store hands out a whole wave in
// one batch, whose configs a cold run times one by one as their compiles end).
size_t priorRacedBefore(const StopRule& s, const std::vector<size_t>& got) {
  std::vector<char> now(s.cv.taken.size(), 0);
  for (size_t j : got) now[j] = 1;
  size_t k = 0;
  for (size_t j = 0; j < s.cv.taken.size(); ++j)
    k += !now[j] && s.cv.taken[j] && !s.picked[j] && !s.owed[j] && !s.trigger[j] ? 1 : 0;
  return k;
}

}  // namespace

bool owePickClasses(StopRule& s, const std::vector<size_t>& got, double leader_ms,
                    double vendor_ms, size_t explored, CompilePool& pool,
                    std::vector<size_t>* triggers) {
  std::vector<size_t> owing;
  const size_t before = priorRacedBefore(s, got);
  for (size_t j : got)
    if (!s.owed[j] && (s.picked[j] || before >= guided::kStallAfter) &&
        hasNamedValue(s.cv.classes[j]) &&
        guided::owesClass(s.cv.ms[j], vendor_ms, priorBest(s, j), leader_ms))
      owing.push_back(j);
  size_t owed = 0;
  for (size_t j : owing) {
    const std::vector<size_t> rest = guided::sameClasses(s.cv.classes, s.cv.taken, j);
    if (rest.size() > guided::kStallAfter) continue;  // more than a stall's worth: not owed
    s.trigger[j] = 1;
    if (triggers) triggers->push_back(j);
    for (size_t q : rest) {
      owed += s.owed[q] ? 0 : 1;
      s.owed[q] = 1;
    }
    pool.promote(rest);
  }
  if (owed > 0) timelineMark("race_owed", strprintf("%zu at %zu raced", owed, explored));
  return owed > 0;
}

bool stopsHere(StopRule& s, bool by_regret, size_t explored, size_t min_n, size_t since_leader,
               CompilePool& pool, std::ostream* log, const std::string& what) {
  const bool patient = since_leader >= guided::patience(explored);
  const bool stall = patient && since_leader >= guided::kStallAfter;
  if (explored >= min_n && patient && (by_regret || stall)) {
    s.regret_held = s.regret_held || by_regret;
    s.stall_held = s.stall_held || stall;
  }
  if (!s.stall_held && !(s.regret_held && by_regret)) return false;
  const std::vector<size_t> cover = guided::uncovered(s.cv, !by_regret);
  for (size_t j : cover) s.picked[j] = 1;
  pool.promote(cover);
  if (!cover.empty())
    timelineMark("race_cover", strprintf("%zu at %zu raced (%s)", cover.size(), explored,
                                         by_regret ? "values" : "values and groups"));
  if (log && !cover.empty())
    *log << strprintf("ktune: %s: guided: %zu more for classes not raced yet\n", what.c_str(),
                      cover.size());
  for (size_t j = 0; j < s.owed.size(); ++j)
    if (s.owed[j] && !s.cv.taken[j]) return false;
  return cover.empty() && patient;
}

}  // namespace ktune::detail
