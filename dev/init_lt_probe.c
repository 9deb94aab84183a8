// GPU machine, a probe for issue 34 (bench/NOTES.md): does loading cuBLASLt in a second thread slow
// the driver's start (cuInit) of the same process? A tuning run starts both at once (the preload
// beside openGpu). One measurement per process:
//   init_lt_probe init      dlopen libcuda, then cuInit + the device queries the first compiles need
//   init_lt_probe init_lt   the same while a thread dlopens libcublasLt (started just before cuInit)
//   init_lt_probe lt_init   dlopen libcublasLt first, then cuInit (each alone, in turn)
// Prints the milliseconds of cuInit + queries, and when the cuBLASLt load ended (from the start).
// Build: cc -O2 -o init_lt_probe dev/init_lt_probe.c -ldl -lpthread
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static double t_start, lt_done;

static void* load_lt(void* arg) {
  (void)arg;
  const char* names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  for (int i = 0; i < 3; ++i)
    if (dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) break;
  lt_done = now_ms() - t_start;
  return NULL;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "init";
  t_start = now_ms();
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu) {
    printf("%s: no libcuda\n", mode);
    return 1;
  }
  int (*cuInit)(unsigned) = (int (*)(unsigned))dlsym(cu, "cuInit");
  int (*cuDeviceGet)(int*, int) = (int (*)(int*, int))dlsym(cu, "cuDeviceGet");
  int (*cuAttr)(int*, int, int) = (int (*)(int*, int, int))dlsym(cu, "cuDeviceGetAttribute");
  pthread_t th;
  int threaded = strcmp(mode, "init_lt") == 0;
  if (strcmp(mode, "lt_init") == 0) load_lt(NULL);
  if (threaded) pthread_create(&th, NULL, load_lt, NULL);
  const double t1 = now_ms();
  const int rc = cuInit(0);
  int dev = 0, sms = 0, ma = 0, mi = 0;
  cuDeviceGet(&dev, 0);
  cuAttr(&sms, 16, dev);
  cuAttr(&ma, 75, dev);
  cuAttr(&mi, 76, dev);
  const double t2 = now_ms();
  if (threaded) pthread_join(th, NULL);
  printf("PROBE %s cuinit+query %.1f ms (from start %.1f) lt_done %.1f ms rc %d sm_%d%d %d SMs\n", mode,
         t2 - t1, t2 - t_start, lt_done, rc, ma, mi, sms);
  return 0;
}
