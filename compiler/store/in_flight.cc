#include "compiler/store/in_flight.h"

#include <exception>
#include <utility>

namespace ktune {

InFlightCompiles::Result InFlightCompiles::run(const std::string& key,
                                               const std::function<Result()>& fn, bool* joined) {
  if (joined) *joined = false;
  std::promise<Result> mine;
  std::shared_future<Result> theirs;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = running_.find(key);
    if (it != running_.end()) {
      theirs = it->second;
    } else {
      running_.emplace(key, mine.get_future().share());
    }
  }
  if (theirs.valid()) {
    if (joined) *joined = true;
    return theirs.get();
  }
  // The entry leaves the map before the waiters wake: a later caller finds the store's entry (or
  // compiles again after a failure) instead of an old result.
  auto finish = [&](Result r) {
    {
      std::lock_guard<std::mutex> l(mu_);
      running_.erase(key);
    }
    mine.set_value(r);
    return r;
  };
  try {
    return finish(fn());
  } catch (...) {  // a compiler that throws: the waiters get an error, not a broken promise
    return finish(Status::Internal("compile of " + key + " threw an exception"));
  }
}

}  // namespace ktune
