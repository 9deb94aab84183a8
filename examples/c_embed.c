/* Embedding ktune from C: what a compiler's runtime does to hand ktune a kernel and get the tuned
 * launch back. It registers z = a * x + y from data (source text, config space as JSON, key,
 * launch rule as expressions, argument signature), calls it (the first call per key tunes), checks
 * the result, and prints the key's report.
 *
 *   cc -std=c11 c_embed.c $(pkg-config --cflags --libs ktune) -o c_embed
 *   ./c_embed            # simulated backend (no GPU needed): a host function stands in for the
 *                        # kernel and its simulated cost makes BLOCK=256,VEC=2 the fastest
 *   ./c_embed auto       # the GPU: the same source compiled with NVRTC / hiprtc
 *
 * Output: the winner, where it came from, and how many times the kernel ran in this process
 * (a second run finds the key in the tuning database: one launch, nothing tuned). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ktune/ktune.h>

static const char* kSource =
    "#include \"prelude.cuh\"\n"
    "KTUNE_KERNEL void c_embed_axpy(long long n, float a, const float* x, const float* y,\n"
    "                               float* z) {\n"
    "  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;\n"
    "  for (int k = 0; k < VEC; ++k)\n"
    "    if (i + k < n) z[i + k] = a * x[i + k] + y[i + k];\n"
    "}\n";

/* ---- the simulated kernel: what the GPU kernel above does, on the host ---- */
static int g_launches = 0;

static int simRun(void* user, const ktune_sim_launch* l) {
  (void)user;
  long long n;
  float a;
  uint64_t x, y, z;
  memcpy(&n, ktune_sim_arg(l, 0), sizeof n);
  memcpy(&a, ktune_sim_arg(l, 1), sizeof a);
  memcpy(&x, ktune_sim_arg(l, 2), sizeof x);
  memcpy(&y, ktune_sim_arg(l, 3), sizeof y);
  memcpy(&z, ktune_sim_arg(l, 4), sizeof z);
  const float* xs = ktune_sim_host_ptr(l, x);
  const float* ys = ktune_sim_host_ptr(l, y);
  float* zs = ktune_sim_host_ptr(l, z);
  /* Only the elements the launch covers are written, so a wrong launch rule fails the check. */
  long long covered = (long long)ktune_sim_grid(l, 0) * ktune_sim_block(l, 0) *
                      ktune_sim_knob(l, "VEC", 1);
  for (long long i = 0; i < n && i < covered; ++i) zs[i] = a * xs[i] + ys[i];
  ++g_launches;
  return KTUNE_OK;
}

static double simCost(void* user, const ktune_sim_launch* l) {
  (void)user;
  double block = (double)ktune_sim_knob(l, "BLOCK", 0), vec = (double)ktune_sim_knob(l, "VEC", 0);
  return 0.01 + fabs(block - 256) * 1e-5 + fabs(vec - 2) * 1e-3;
}

#define CHECK(call)                                                                   \
  do {                                                                                \
    int rc_ = (call);                                                                 \
    if (rc_ != KTUNE_OK) {                                                            \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ktune_status_name(rc_),           \
              ktune_last_error());                                                    \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  const char* backend = argc > 1 ? argv[1] : "sim";
  ktune_tuner* t = NULL;
  CHECK(ktune_tuner_create(backend, &t));
  int sim = strcmp(ktune_tuner_backend(t), "sim") == 0;
  if (sim) CHECK(ktune_sim_register_kernel(t, "c_embed_axpy", simRun, simCost, NULL));

  static const ktune_arg args[] = {{"n", KTUNE_ARG_I64}, {"a", KTUNE_ARG_F32},
                                   {"x", KTUNE_ARG_PTR}, {"y", KTUNE_ARG_PTR},
                                   {"z", KTUNE_ARG_PTR}};
  static const char* const key[] = {"pow2(n)"};
  ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
  d.name = "c_embed_axpy";
  d.source = kSource;
  d.entry = "c_embed_axpy";
  d.space_json =
      "{\"params\": {\"BLOCK\": [64, 128, 256, 512], \"VEC\": [1, 2, 4]},"
      " \"constraints\": [\"BLOCK * VEC <= 1024\"], \"default\": {\"BLOCK\": 128, \"VEC\": 1}}";
  d.args = args;
  d.num_args = 5;
  d.key = key;
  d.num_key = 1;
  d.grid[0] = "cdiv(n, BLOCK * VEC)";
  d.block[0] = "BLOCK";
  ktune_family* f = NULL;
  CHECK(ktune_family_register(t, &d, &f));

  /* A launch rule with a typo is refused at registration, with the column. */
  ktune_family_desc bad = d;
  bad.name = "c_embed_bad";
  bad.grid[0] = "cdiv(n, BLOK * VEC)";
  ktune_family* unused = NULL;
  if (ktune_family_register(t, &bad, &unused) != KTUNE_ERR_INVALID_ARGUMENT) {
    fprintf(stderr, "a bad launch rule was accepted\n");
    return 1;
  }
  printf("bad rule rejected: %s\n", ktune_last_error());

  const long long n = 10000;
  const float a = 2.5f;
  size_t bytes = (size_t)n * sizeof(float);
  float* hx = malloc(bytes);
  float* hy = malloc(bytes);
  float* hz = malloc(bytes);
  if (!hx || !hy || !hz) return 1;
  for (long long i = 0; i < n; ++i) {
    hx[i] = (float)(i % 13) - 6.0f;
    hy[i] = (float)(i % 7);
  }
  uint64_t x, y, z;
  CHECK(ktune_malloc(t, bytes, &x));
  CHECK(ktune_malloc(t, bytes, &y));
  CHECK(ktune_malloc(t, bytes, &z));
  CHECK(ktune_memcpy_htod(t, x, hx, bytes));
  CHECK(ktune_memcpy_htod(t, y, hy, bytes));

  ktune_value v[5];
  memset(v, 0, sizeof v);
  v[0].type = KTUNE_ARG_I64; v[0].v.i64 = n;
  v[1].type = KTUNE_ARG_F32; v[1].v.f32 = a;
  v[2].type = KTUNE_ARG_PTR; v[2].v.ptr = x;
  v[3].type = KTUNE_ARG_PTR; v[3].v.ptr = y;
  v[4].type = KTUNE_ARG_PTR; v[4].v.ptr = z;
  g_launches = 0;
  CHECK(ktune_family_call(f, v, 5, NULL));  /* tunes on the first call for this key */
  CHECK(ktune_synchronize(t, NULL));
  int launches = g_launches;

  CHECK(ktune_memcpy_dtoh(t, hz, z, bytes));
  for (long long i = 0; i < n; ++i) {
    if (hz[i] != a * hx[i] + hy[i]) {
      fprintf(stderr, "wrong result at %lld: %g\n", i, hz[i]);
      return 1;
    }
  }

  char* k = NULL;
  char* report = NULL;
  CHECK(ktune_family_key(f, v, 5, &k));
  CHECK(ktune_report_json(t, "c_embed_axpy", k, &report));
  printf("key %s\nreport %.300s...\n", k, report);
  if (sim && !strstr(report, "\"winner\":\"BLOCK=256,VEC=2\"")) {
    fprintf(stderr, "the simulated costs make BLOCK=256,VEC=2 the fastest; report: %s\n", report);
    return 1;
  }
  printf("result ok, launches=%d\n", launches);
  ktune_free(k);
  ktune_free(report);
  CHECK(ktune_mfree(t, x));
  CHECK(ktune_mfree(t, y));
  CHECK(ktune_mfree(t, z));
  free(hx);
  free(hy);
  free(hz);
  ktune_tuner_destroy(t);
  return 0;
}
