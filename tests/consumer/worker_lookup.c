/* consumer_test: libktune.so finds ktune-worker from its own location (dladdr), the way an
 * installed package has it (<prefix>/lib/libktune.so, <prefix>/bin/ktune-worker). run.sh starts
 * this program from a directory without a worker, with the prefix off PATH and KTUNE_WORKER unset,
 * with isolation on and a built-in op on the simulated backend. The worker it finds starts and
 * refuses the simulated backend (that needs a plugin), so the call fails; the error names the
 * executable the library found, which run.sh checks. Prints "rc=<code>" and the error. */
#include <ktune/ktune.h>
#include <stdio.h>

int main(void) {
  ktune_tuner_options o = KTUNE_TUNER_OPTIONS_INIT;
  o.backend = "sim";
  o.isolate = 1;
  ktune_tuner* t = NULL;
  if (ktune_tuner_create_ex(&o, &t) != KTUNE_OK) {
    fprintf(stderr, "FAIL create: %s\n", ktune_last_error());
    return 1;
  }
  const int64_t rows = 4, cols = 256;
  uint64_t x = 0, y = 0;
  if (ktune_malloc(t, (size_t)(rows * cols * 4), &x) != KTUNE_OK ||
      ktune_malloc(t, (size_t)(rows * cols * 4), &y) != KTUNE_OK) {
    fprintf(stderr, "FAIL malloc: %s\n", ktune_last_error());
    return 1;
  }
  ktune_rmsnorm_params p = {0};
  p.dtype = KTUNE_DTYPE_F32;
  p.rows = rows;
  p.cols = cols;
  p.x = x;
  p.y = y;
  p.eps = 1e-6f;
  int rc = ktune_rmsnorm(t, &p, 0);
  printf("rc=%d\n%s\n", rc, ktune_last_error());
  ktune_tuner_destroy(t);
  return 0;
}
