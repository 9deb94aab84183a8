/* A compiler driving ktune through the C API with modules it generates per config.
 *
 * The "compiler" here is a toy code generator: for z = a * x + y it writes one PTX module per
 * config, with the block size and the elements per thread (VEC, unrolled) baked into the text,
 * as Triton, Inductor or an MLIR pipeline would. It registers the family with a source_fn
 * instead of source text; ktune asks it for the module of each config, compiles and caches the
 * modules (keyed by their text), benchmarks them and keeps the fastest. A config the generator
 * cannot handle is an error value: that config fails, the others are tuned.
 *
 *   ./c_compiler              # simulated backend (no GPU): a host function stands in for the
 *                             # kernel, its cost makes BLOCK=256,VEC=2 the fastest
 *   ./c_compiler auto         # an NVIDIA GPU: the generated PTX compiled and run for real
 *   ./c_compiler sim DIR      # also writes the module of every config to DIR/<config>.ptx
 *
 * A second run with the same KTUNE_CACHE_DIR finds the key in the tuning database: the generator
 * is asked for the winner's module only, and its binary comes from the code-object store. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ktune/ktune.h>

/* ---- the toy compiler ---- */

typedef struct Compiler {
  char target[32];     /* PTX .target */
  const char* emit_dir; /* NULL or where to write each module */
  int generated;       /* modules handed to ktune */
} Compiler;

/* "BLOCK=256,VEC=2" -> the knob's value, or -1. */
static long knob(const char* config, const char* name) {
  size_t len = strlen(name);
  for (const char* p = config; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncmp(p, name, len) == 0 && p[len] == '=') return strtol(p + len + 1, NULL, 10);
  }
  return -1;
}

/* Appends printf-formatted text to buf (capacity cap); returns 0 when it does not fit. */
static int put(char* buf, size_t cap, size_t* len, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= cap - *len) return 0;
  *len += (size_t)n;
  return 1;
}

/* The PTX of one config (malloc'ed): thread i handles elements [i * VEC, i * VEC + VEC),
 * unrolled, with BLOCK and VEC as constants in the text. */
static char* generatePtx(const char* target, long block, long vec) {
  const size_t cap = 1024 + 512 * (size_t)vec;
  char* s = malloc(cap);
  size_t len = 0;
  if (!s) return NULL;
  int ok = put(s, cap, &len,
               ".version 8.0\n.target %s\n.address_size 64\n"
               ".visible .entry gen_axpy(.param .u64 pn, .param .f32 pa, .param .u64 px,\n"
               "                         .param .u64 py, .param .u64 pz) {\n"
               "  .reg .pred %%p;\n  .reg .b32 %%r<3>;\n  .reg .b64 %%rd<12>;\n"
               "  .reg .f32 %%f<4>;\n"
               "  ld.param.u64 %%rd1, [pn];\n  ld.param.f32 %%f1, [pa];\n"
               "  ld.param.u64 %%rd2, [px];\n  ld.param.u64 %%rd3, [py];\n"
               "  ld.param.u64 %%rd4, [pz];\n"
               "  mov.u32 %%r1, %%ctaid.x;\n  mov.u32 %%r2, %%tid.x;\n"
               "  mul.wide.u32 %%rd5, %%r1, %ld;\n  cvt.u64.u32 %%rd6, %%r2;\n"
               "  add.s64 %%rd5, %%rd5, %%rd6;\n  mul.lo.s64 %%rd5, %%rd5, %ld;\n",
               target, block, vec);
  for (long k = 0; ok && k < vec; ++k) {
    ok = put(s, cap, &len,
             "  add.s64 %%rd7, %%rd5, %ld;\n  setp.ge.s64 %%p, %%rd7, %%rd1;\n"
             "  @%%p bra DONE;\n  shl.b64 %%rd8, %%rd7, 2;\n"
             "  add.s64 %%rd9, %%rd2, %%rd8;\n  add.s64 %%rd10, %%rd3, %%rd8;\n"
             "  add.s64 %%rd11, %%rd4, %%rd8;\n"
             "  ld.global.f32 %%f2, [%%rd9];\n  ld.global.f32 %%f3, [%%rd10];\n"
             "  fma.rn.f32 %%f2, %%f1, %%f2, %%f3;\n  st.global.f32 [%%rd11], %%f2;\n",
             k);
  }
  if (!ok || !put(s, cap, &len, "DONE:\n  ret;\n}\n")) {
    free(s);
    return NULL;
  }
  return s;
}

static void releaseModule(void* user, ktune_config_source* src) {
  (void)user;
  free((void*)src->text);
}

/* ktune's source_fn: the module of `config`, or an error value. */
static int moduleOf(void* user, const char* config, ktune_config_source* out) {
  Compiler* c = user;
  long block = knob(config, "BLOCK"), vec = knob(config, "VEC");
  if (block <= 0 || vec <= 0) {
    out->error = "config without BLOCK or VEC";
    return KTUNE_ERR_INVALID_ARGUMENT;
  }
  if (block * vec > 1024) {
    out->error = "more than 1024 elements per block exceed this generator's unroll budget";
    return KTUNE_ERR_UNSUPPORTED;
  }
  char* ptx = generatePtx(c->target, block, vec);
  if (!ptx) return KTUNE_ERR_OUT_OF_RESOURCES;
  if (c->emit_dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.ptx", c->emit_dir, config);
    FILE* f = fopen(path, "w");
    if (f) {
      fputs(ptx, f);
      fclose(f);
    }
  }
  out->language = "ptx";
  out->text = ptx;
  out->entry = "gen_axpy";
  out->release = releaseModule;  /* ktune copies the text, then hands it back to be freed */
  ++c->generated;                /* calls are serialised per family: no lock needed */
  return KTUNE_OK;
}

/* ---- the simulated kernel: what the generated PTX does, on the host ---- */
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
  long long covered = (long long)ktune_sim_grid(l, 0) * ktune_sim_block(l, 0) *
                      ktune_sim_knob(l, "VEC", 1);
  for (long long i = 0; i < n && i < covered; ++i) zs[i] = a * xs[i] + ys[i];
  ++g_launches;
  return KTUNE_OK;
}

static double simCost(void* user, const ktune_sim_launch* l) {
  (void)user;
  double block = (double)ktune_sim_block(l, 0), vec = (double)ktune_sim_knob(l, "VEC", 0);
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
  const char* arch = ktune_tuner_arch(t);
  int sim = strcmp(ktune_tuner_backend(t), "sim") == 0;
  if (!sim && strncmp(arch, "sm_", 3) != 0) {
    printf("this generator writes PTX; the device is %s: nothing to do\n", arch);
    ktune_tuner_destroy(t);
    return 0;
  }
  if (sim) CHECK(ktune_sim_register_kernel(t, "gen_axpy", simRun, simCost, NULL));

  Compiler gen;
  memset(&gen, 0, sizeof gen);
  snprintf(gen.target, sizeof gen.target, "%s", sim ? "sm_90a" : arch);
  gen.emit_dir = argc > 2 ? argv[2] : NULL;

  static const ktune_arg args[] = {{"n", KTUNE_ARG_I64}, {"a", KTUNE_ARG_F32},
                                   {"x", KTUNE_ARG_PTR}, {"y", KTUNE_ARG_PTR},
                                   {"z", KTUNE_ARG_PTR}};
  static const char* const key[] = {"pow2(n)"};
  ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
  d.name = "c_compiler_axpy";
  d.source_fn = moduleOf; /* instead of d.source: one generated module per config */
  d.source_user = &gen;
  d.space_json = "{\"params\": {\"BLOCK\": [64, 128, 256, 512], \"VEC\": [1, 2, 4]}}";
  d.args = args;
  d.num_args = 5;
  d.key = key;
  d.num_key = 1;
  d.grid[0] = "cdiv(n, BLOCK * VEC)";
  d.block[0] = "BLOCK";
  ktune_family* f = NULL;
  CHECK(ktune_family_register(t, &d, &f));

  const long long n = 100000;
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
  CHECK(ktune_family_call(f, v, 5, NULL)); /* the first call per key tunes */
  CHECK(ktune_synchronize(t, NULL));
  CHECK(ktune_memcpy_dtoh(t, hz, z, bytes));
  for (long long i = 0; i < n; ++i) {
    if (fabsf(hz[i] - (a * hx[i] + hy[i])) > 1e-5f * (1 + fabsf(hz[i]))) {
      fprintf(stderr, "wrong result at %lld: %g\n", i, hz[i]);
      return 1;
    }
  }

  char* k = NULL;
  char* report = NULL;
  CHECK(ktune_family_key(f, v, 5, &k));
  CHECK(ktune_report_json(t, "c_compiler_axpy", k, &report));
  const char* w = strstr(report, "\"winner\":\"");
  w = w ? w + 10 : "?\"";
  printf("key %s -> winner %.*s\n", k, (int)strcspn(w, "\""), w);
  printf("modules generated: %d; result ok\n", gen.generated);
  if (strstr(report, "unroll budget")) printf("refused by the generator: BLOCK=512,VEC=4\n");
  if (sim && !strstr(report, "\"winner\":\"BLOCK=256,VEC=2\"")) {
    fprintf(stderr, "the simulated costs make BLOCK=256,VEC=2 the fastest; report: %s\n", report);
    return 1;
  }
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
