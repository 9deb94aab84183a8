// Records a tuning run's progress events in arrival order (tests of the compile/bench pipeline).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "autotune/search.h"

namespace ktune::tunertest {

// Progress events in arrival order ("compile:<config>" / "bench:<config>").
struct ProgressRecorder {
  std::mutex mu;
  std::vector<std::string> events;
  // Called after each recorded event, outside the lock (a test opens its gates here).
  std::function<void(const TuneProgress&)> then;
  std::function<void(const TuneProgress&)> fn() {
    return [this](const TuneProgress& p) {
      if (p.phase != "compile" && p.phase != "bench") return;
      {
        std::lock_guard<std::mutex> l(mu);
        events.push_back(p.phase + ":" + p.config);
      }
      if (then) then(p);
    };
  }
  int first(const std::string& prefix) const {
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].rfind(prefix, 0) == 0) return static_cast<int>(i);
    return -1;
  }
  int last(const std::string& prefix) const {
    int r = -1;
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].rfind(prefix, 0) == 0) r = static_cast<int>(i);
    return r;
  }
  int count(const std::string& prefix) const {
    int n = 0;
    for (const auto& e : events) n += e.rfind(prefix, 0) == 0;
    return n;
  }
};

}  // namespace ktune::tunertest
