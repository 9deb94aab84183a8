/* out = a * x from C, registered as data and tuned on its first call (README.md shows this file).
 *   KTUNE_BACKEND=sim ./scale   no GPU: a host function stands in for the kernel
 *   ./scale                     on a GPU (backend from KTUNE_BACKEND, default auto) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ktune/ktune.h>

static const char* kSource =
    "#include \"prelude.cuh\"\n"
    "KTUNE_KERNEL void scale(long long n, const float* x, float* out, float a) {\n"
    "  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;\n"
    "  for (int k = 0; k < VEC; ++k) if (i + k < n) out[i + k] = a * x[i + k];\n"
    "}\n";

/* The simulated backend's stand-in for `scale` (it runs no device code) and its cost in ms. */
static int simScale(void* user, const ktune_sim_launch* l) {
  long long n;
  uint64_t x, out;
  float a;
  (void)user;
  memcpy(&n, ktune_sim_arg(l, 0), sizeof n);
  memcpy(&x, ktune_sim_arg(l, 1), sizeof x);
  memcpy(&out, ktune_sim_arg(l, 2), sizeof out);
  memcpy(&a, ktune_sim_arg(l, 3), sizeof a);
  const float* xs = ktune_sim_host_ptr(l, x);
  float* os = ktune_sim_host_ptr(l, out);
  for (long long i = 0; i < n; ++i) os[i] = a * xs[i];
  return KTUNE_OK;
}
static double simCost(void* user, const ktune_sim_launch* l) {
  (void)user;
  return 0.01 + (double)labs((long)ktune_sim_knob(l, "BLOCK", 0) - 256) * 1e-5;
}

#define CHECK(call)                                                          \
  do {                                                                       \
    if ((call) != KTUNE_OK) {                                                \
      fprintf(stderr, "%s failed: %s\n", #call, ktune_last_error());        \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(void) {
  ktune_tuner* t = NULL;
  ktune_family* f = NULL;
  CHECK(ktune_tuner_create(NULL, &t)); /* NULL: KTUNE_BACKEND (auto | cuda | hip | sim) */
  if (strcmp(ktune_tuner_backend(t), "sim") == 0)
    CHECK(ktune_sim_register_kernel(t, "scale", simScale, simCost, NULL));

  static const ktune_arg args[] = {{"n", KTUNE_ARG_I64}, {"x", KTUNE_ARG_PTR},
                                   {"out", KTUNE_ARG_PTR}, {"a", KTUNE_ARG_F32}};
  static const char* const key[] = {"pow2(n)"};
  ktune_family_desc d = KTUNE_FAMILY_DESC_INIT; /* versioned by struct_size */
  d.name = "scale";
  d.source = kSource;
  d.entry = "scale";
  d.space_json = "{\"params\": {\"BLOCK\": [128, 256], \"VEC\": [1, 2, 4]}}";
  d.args = args;
  d.num_args = 4;
  d.key = key;
  d.num_key = 1;
  d.grid[0] = "cdiv(n, BLOCK * VEC)";
  d.block[0] = "BLOCK";
  d.no_verify = 1; /* no reference kernel: the result is checked below */
  CHECK(ktune_family_register(t, &d, &f));

  enum { N = 100000 };
  static float hx[N], hout[N];
  for (int i = 0; i < N; ++i) hx[i] = (float)(i % 11);
  uint64_t x, out;
  CHECK(ktune_malloc(t, sizeof hx, &x));
  CHECK(ktune_malloc(t, sizeof hout, &out));
  CHECK(ktune_memcpy_htod(t, x, hx, sizeof hx));
  ktune_value v[4];
  memset(v, 0, sizeof v);
  v[0].type = KTUNE_ARG_I64, v[0].v.i64 = N;
  v[1].type = KTUNE_ARG_PTR, v[1].v.ptr = x;
  v[2].type = KTUNE_ARG_PTR, v[2].v.ptr = out;
  v[3].type = KTUNE_ARG_F32, v[3].v.f32 = 3.0f;
  CHECK(ktune_family_call(f, v, 4, NULL)); /* tunes on the first call per key */
  CHECK(ktune_synchronize(t, NULL));
  CHECK(ktune_memcpy_dtoh(t, hout, out, sizeof hout));
  for (int i = 0; i < N; ++i)
    if (hout[i] != 3.0f * hx[i]) return fprintf(stderr, "wrong result at %d\n", i), 1;

  char *k = NULL, *report = NULL;
  CHECK(ktune_family_key(f, v, 4, &k));
  CHECK(ktune_report_json(t, "scale", k, &report)); /* what was tried, as JSON */
  printf("scale: key %s, %.120s...\n", k, report);
  ktune_free(k);
  ktune_free(report);
  CHECK(ktune_mfree(t, x));
  CHECK(ktune_mfree(t, out));
  ktune_tuner_destroy(t);
  return 0;
}
