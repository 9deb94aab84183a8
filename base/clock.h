#pragma once
// Elapsed wall time for the time splits the engine and the tools report (JSON reports, verbose
// logs): one definition for every stage that times itself.
#include <chrono>

namespace ktune {

// Milliseconds since t0 on the steady clock.
inline double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ktune
