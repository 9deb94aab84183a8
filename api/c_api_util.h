// Shared by the C API's files (c_api.cc, c_api_ops.cc): the handle structs and the conversion
// of a Status into a return code plus the thread's last-error message.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ktune/ktune.h"
#include "ktune/ktune.hpp"

struct ktune_family {
  ktune::Kernel kernel;
};

struct ktune_tuner {
  std::unique_ptr<ktune::Autotuner> t;
  std::string backend, arch;
  std::mutex mu;
  std::vector<std::unique_ptr<ktune_family>> families;
};

// A simulated launch as the C API hands it out: it points at the C++ view.
struct ktune_sim_launch {
  const ktune::SimLaunchView* view;
};

namespace ktune::capi {

// Sets the calling thread's last error to s.toString() and returns s's code.
int fail(const Status& s);
// Clears the last error and returns KTUNE_OK.
int ok();
inline int check(const Status& s) { return s.ok() ? ok() : fail(s); }
inline int invalid(const std::string& why) { return fail(Status::InvalidArgument(why)); }

inline Autotuner* tunerOf(ktune_tuner* t) { return t->t.get(); }
using SimLaunchC = ktune_sim_launch;
inline const ktune_sim_launch* launchOf(const SimLaunchC* c) { return c; }
inline const SimLaunchView* viewOf(const ktune_sim_launch* l) { return l->view; }

}  // namespace ktune::capi
