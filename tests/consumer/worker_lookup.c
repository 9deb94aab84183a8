/* consumer_test: libktune.so finds ktune-worker from its own location (dladdr), the way an
 * installed package has it (<prefix>/lib/libktune.so, <prefix>/bin/ktune-worker). run.sh starts
 * this program from a directory without a worker, with the prefix off PATH and KTUNE_WORKER unset,
 * so only the library's own location leads to the worker. Prints "worker=<path>" and exits 0, or
 * prints the error and exits 1. */
#include <ktune/ktune.h>
#include <stdio.h>

int main(void) {
  ktune_tuner* t = NULL;
  if (ktune_tuner_create("sim", &t) != KTUNE_OK) {
    fprintf(stderr, "FAIL create: %s\n", ktune_last_error());
    return 1;
  }
  char* path = NULL;
  int rc = ktune_worker_path(t, &path);
  if (rc != KTUNE_OK) {
    fprintf(stderr, "FAIL ktune_worker_path (%d): %s\n", rc, ktune_last_error());
    ktune_tuner_destroy(t);
    return 1;
  }
  printf("worker=%s\n", path);
  ktune_free(path);
  ktune_tuner_destroy(t);
  return 0;
}
