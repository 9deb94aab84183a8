// The CUDA driver's stream-capture and graph entry points for the GPU tests that capture ktune
// calls into graphs (shapes_gpu_test.cc, pdl_gpu_test.cc).
#pragma once

#include <dlfcn.h>

namespace ktune {

// The driver's graph entry points, opened like the runtime opens libcuda (no link dependency).
struct GraphApi {
  int (*begin)(void*, int) = nullptr;
  int (*end)(void*, void**) = nullptr;
  int (*instantiate)(void**, void*, unsigned long long) = nullptr;
  int (*launch)(void*, void*) = nullptr;
  int (*exec_destroy)(void*) = nullptr;
  int (*destroy)(void*) = nullptr;
  bool open() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    begin = reinterpret_cast<decltype(begin)>(dlsym(h, "cuStreamBeginCapture_v2"));
    end = reinterpret_cast<decltype(end)>(dlsym(h, "cuStreamEndCapture"));
    instantiate = reinterpret_cast<decltype(instantiate)>(dlsym(h, "cuGraphInstantiateWithFlags"));
    launch = reinterpret_cast<decltype(launch)>(dlsym(h, "cuGraphLaunch"));
    exec_destroy = reinterpret_cast<decltype(exec_destroy)>(dlsym(h, "cuGraphExecDestroy"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(h, "cuGraphDestroy"));
    return begin && end && instantiate && launch && exec_destroy && destroy;
  }
};

}  // namespace ktune
