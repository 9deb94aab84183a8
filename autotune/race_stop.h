// The guided race's stop rule (autotune/guided.h has the rules, docs/search.md the story): when a
// stop holds, what the race still waits for (coverage picks, owed classes, the patience).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/compile_pool.h"
#include "autotune/guided.h"

namespace ktune::detail {

// The race's stop (guided.h: kStallAfter, the coverage rule). A stop reached holds: the stall's
// once reached, the regret estimate's while the estimate stays below its bar. While one holds, the
// race ends once the coverage that rule waits for is raced (guided::uncovered: those positions are
// raced next, promoted and marked in `picked`) with the rest of each owed class (`owed`:
// owePickClasses), and `patience` candidates followed the last leader (the rest of a coverage
// pick's class, when it led: a restart of the prior's order, whose count had already stalled, is
// not waited for).
struct StopRule {
  guided::Coverage cv;
  std::vector<char> picked;  // positions coverage moved ahead
  std::vector<char> owed;    // the rest of a class that is owed (owePickClasses)
  std::vector<char> trigger;  // the positions whose time made their class owed
  bool stall_held = false, regret_held = false;
  // Nothing raced yet, of n positions (cv.classes is the caller's).
  void reset(size_t n) {
    cv.taken.assign(n, false);
    cv.ms.assign(n, 0);
    picked.assign(n, 0);
    owed.assign(n, 0);
    trigger.assign(n, 0);
  }
};

// The configs just raced (`got`) that owe their class mark its rest owed and promote it (a
// timeline mark says how many, after `explored` raced); returns whether any class became owed.
// A config owes its class (guided::owesClass: at a vendor leader's edge, where none of the
// prior's order came) when it is a coverage pick, or any config that is the first of the prior's
// order to reach that edge after a stall's worth (guided::kStallAfter) of it did not, raced in
// batches before its own (a warm store hands a whole first wave out as one batch: counting its
// batchmates owed a prefill key's class that no cold run of the tree owed, and its warm race
// compiled 21 configs its cold store lacked, bench/NOTES.md, issue 34): at a GEMM
// decode key on the GPU the two configs of the winner's class that reached cuBLASLt's edge first
// were compiles still running when the stop came (bench/NOTES.md, issue 34). At a prefill key
// the first wave's configs reach it among the first few. Only a class of named values (the family's
// race_each: values the prior cannot rank) is owed, never a calibration group alone: it can be
// most of the space; nor a class whose rest is more than a stall's worth (guided::kStallAfter):
// a named value such as the GEMM's CLUSTER_M spans most of the tma space at a prefill key, where
// the decode winner's class that the rule is for had 8 configs and the owed rests on the GPU were
// 3-7. `vendor_ms`: the fastest vendor candidate's time (0: none). `triggers`, when given: the
// positions whose class became owed are appended.
bool owePickClasses(StopRule& s, const std::vector<size_t>& got, double leader_ms,
                    double vendor_ms, size_t explored, CompilePool& pool,
                    std::vector<size_t>* triggers = nullptr);

// Whether the race stops after this batch; `by_regret`: the estimate is below its bar. `log`
// (verbose): how many positions coverage moved ahead, after `what` (the family and key).
bool stopsHere(StopRule& s, bool by_regret, size_t explored, size_t min_n, size_t since_leader,
               CompilePool& pool, std::ostream* log, const std::string& what);

}  // namespace ktune::detail
