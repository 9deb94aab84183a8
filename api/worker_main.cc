// ktune-worker — the isolation worker (see autotune/isolation.h). Started by a tuner with
// isolation on; not meant to be run by hand. Its logic is ktune_worker_main in libktune (worker.cc),
// so that the plugins it loads and the worker share one copy of the library.
#include "api/worker.h"

int main(int argc, char** argv) { return ktune_worker_main(argc, argv); }
