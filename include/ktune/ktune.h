/* ktune — the C API (C11; usable from C++, Rust, Python ctypes, a compiler's runtime).
 *
 * Hand ktune a kernel as data — source text, entry name, config space (JSON), key fields, launch
 * rule (integer expressions), argument signature — and call it with typed argument values: the
 * first call per key compiles every config, benchmarks them and records the fastest; later calls
 * are a hash lookup and a launch. The same engine, tuning database and code-object store as the
 * C++ API (<ktune/ktune.hpp>) and the CLI: a key tuned from one is a hit from the others.
 *
 * Conventions:
 *  - Every function returning int returns KTUNE_OK (0) or a KTUNE_ERR_* code; the message of the
 *    last failure on the calling thread is ktune_last_error() (valid until that thread's next
 *    ktune call). Nothing aborts, exits or throws across this header.
 *  - Handles are opaque. A ktune_family belongs to its tuner and is valid until
 *    ktune_tuner_destroy. Strings returned through char** are allocated by ktune and released
 *    with ktune_free.
 *  - Thread safety: every function may be called from any thread; a tuner must not be destroyed
 *    while calls on it are in flight.
 *  - Structs carrying `struct_size` are versioned: set it to sizeof(the struct) of the header
 *    you compile against; fields added later are appended and read only when present.
 *
 * Example (examples/c_embed.c has the whole program):
 *   ktune_tuner* t;  ktune_family* f;
 *   ktune_tuner_create("sim", &t);
 *   ktune_family_desc d = KTUNE_FAMILY_DESC_INIT;
 *   d.name = "saxpy"; d.source = src; d.entry = "saxpy";
 *   d.space_json = "{\"params\": {\"BLOCK\": [128, 256], \"VEC\": [1, 2, 4]}}";
 *   d.args = args; d.num_args = 4;  d.key = keys; d.num_key = 1;
 *   d.grid[0] = "cdiv(n, BLOCK * VEC)"; d.block[0] = "BLOCK";
 *   if (ktune_family_register(t, &d, &f) != KTUNE_OK) puts(ktune_last_error());
 *   ktune_family_call(f, values, 4, NULL);
 */
#ifndef KTUNE_KTUNE_H
#define KTUNE_KTUNE_H

#include <stddef.h>
#include <stdint.h>

#include "ktune/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes (the same numbering as ktune::Code in C++). */
enum {
  KTUNE_OK = 0,
  KTUNE_ERR_INVALID_ARGUMENT = 1, /* bad input: spec, expression, argument, option */
  KTUNE_ERR_NOT_FOUND = 2,        /* no such family, key, device, file */
  KTUNE_ERR_UNAVAILABLE = 3,      /* no driver / GPU / compiler */
  KTUNE_ERR_UNSUPPORTED = 4,      /* present but cannot do this */
  KTUNE_ERR_COMPILE = 5,          /* the JIT compiler rejected the source */
  KTUNE_ERR_OUT_OF_RESOURCES = 6,
  KTUNE_ERR_LAUNCH = 7,
  KTUNE_ERR_DEVICE_FAULT = 8,
  KTUNE_ERR_TIMEOUT = 9,
  KTUNE_ERR_WRONG_RESULT = 10,
  KTUNE_ERR_CORRUPT = 11,
  KTUNE_ERR_IO = 12,
  KTUNE_ERR_BUSY = 13,
  KTUNE_ERR_INTERNAL = 14
};

/* "0.1.0": the version of the library that is running. */
KTUNE_API const char* ktune_version(void);
/* Message of the calling thread's last failed call ("" if none). */
KTUNE_API const char* ktune_last_error(void);
/* Stable name of a status code ("invalid_argument"). */
KTUNE_API const char* ktune_status_name(int status);
/* Releases a string returned by ktune (NULL is ignored). */
KTUNE_API void ktune_free(void* p);

/* ---------------------------------------------------------------- tuner */

typedef struct ktune_tuner ktune_tuner;
typedef struct ktune_family ktune_family;
typedef void* ktune_stream; /* CUstream / hipStream_t of the tuner's backend; NULL = default */

/* Options of ktune_tuner_create_ex. Unset fields (NULL, or -1 for the ints) keep the value
 * from the environment (KTUNE_*; see the README), which keeps the documented default. */
/* ktune_tuner_options.tuning: tune untuned keys off the caller's thread (README "Dynamic shapes"). */
#define KTUNE_TUNING_BACKGROUND 2

typedef struct ktune_tuner_options {
  size_t struct_size;     /* sizeof(ktune_tuner_options) */
  const char* backend;    /* "auto" | "cuda" | "hip" | "sim" */
  int device;             /* ordinal; -1 = KTUNE default (0) */
  const char* cache_dir;  /* code-object store and databases */
  const char* database_path; /* one database file instead of one per family */
  int tuning;             /* 0 = off (default config, untuned keys recorded), 1 = on,
                             KTUNE_TUNING_BACKGROUND (2) = an untuned key runs its predicted config
                             at once and is tuned on a thread of the tuner (KTUNE_TUNING=background) */
  int verbose;            /* 0, 1, 2 */
  int isolate;            /* 1 = benchmark candidates in the ktune-worker process; families
                             registered from data then refuse (KTUNE_ERR_UNAVAILABLE): their
                             pointers cannot be used by another process */
  /* Shared results (KTUNE_REMOTE_CACHE): "redis://[user:password@]host:port/db" — keys are looked
   * up there before they are tuned, tuned by one process at a time, and published after tuning;
   * "" = none. A bad URL is KTUNE_ERR_INVALID_ARGUMENT; a remote that is down never fails a call.
   * (Added last: a caller built with the older, shorter struct keeps working.) */
  const char* remote_cache;
  /* How a tuning run searches (KTUNE_SEARCH): "guided" (the default: prior order, lazy compiles,
   * a race; docs/search.md) or "exhaustive"; NULL = the environment's. budget_s (KTUNE_BUDGET):
   * seconds after which a guided run stops exploring; < 0 = the environment's, 0 = no limit.
   * (Added after remote_cache: older callers' shorter structs keep working.) */
  const char* search;
  double budget_s;
} ktune_tuner_options;
#define KTUNE_TUNER_OPTIONS_INIT \
  { sizeof(ktune_tuner_options), NULL, -1, NULL, NULL, -1, -1, -1, NULL, NULL, -1.0 }

/* Opens a tuner on `backend` ("auto", "cuda", "hip", "sim"; NULL = KTUNE_BACKEND or "auto"),
 * everything else from the environment. KTUNE_ERR_UNAVAILABLE when the backend has no device. */
KTUNE_API int ktune_tuner_create(const char* backend, ktune_tuner** out);
KTUNE_API int ktune_tuner_create_ex(const ktune_tuner_options* options, ktune_tuner** out);
/* Releases the tuner and its families (NULL is ignored). */
KTUNE_API void ktune_tuner_destroy(ktune_tuner* t);
/* Backend name ("cuda", "hip", "sim") and device architecture ("sm_90a", "gfx942", "sim");
 * valid while the tuner lives. */
KTUNE_API const char* ktune_tuner_backend(const ktune_tuner* t);
KTUNE_API const char* ktune_tuner_arch(const ktune_tuner* t);
/* Background tuning (KTUNE_TUNING=background, KTUNE_TUNING_BACKGROUND): blocks until every key
 * queued so far is tuned or failed; returns how many keys the background thread has tuned in
 * all (0 without background tuning, or for a NULL tuner). */
KTUNE_API uint64_t ktune_tuner_wait_background(ktune_tuner* t);

/* ---------------------------------------------------------------- families */

/* Argument types of a kernel signature. */
enum { KTUNE_ARG_PTR = 0, KTUNE_ARG_I32 = 1, KTUNE_ARG_I64 = 2, KTUNE_ARG_F32 = 3, KTUNE_ARG_F64 = 4 };

typedef struct ktune_arg {
  const char* name; /* identifier; integer arguments can be used in expressions */
  int32_t type;     /* KTUNE_ARG_* */
} ktune_arg;

/* One argument value of a call, tagged with its KTUNE_ARG_* type. */
typedef struct ktune_value {
  int32_t type;
  int32_t reserved; /* 0 */
  union {
    uint64_t ptr; /* device address */
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  } v;
} ktune_value;

/* The kernel module of one config, generated by the caller: what a compiler embedding ktune hands
 * over instead of C++ source (ktune_family_desc.source_fn). ktune zeroes the struct and sets
 * struct_size before each call; the callee fills it.
 *
 *   language: "cuda" / "hip" / "cpp" (C++; the config's knobs arrive as -D defines), "ptx",
 *             "llvm" / "llvm-nvptx" / "llvm-amdgpu" (LLVM IR, lowered for the tuner's arch),
 *             "amdgcn" (assembly), "mlir" (a gpu.module, lowered with mlir-opt-19), "cubin",
 *             "hsaco" (prebuilt code objects, checked and kept as they are). In every language
 *             but C++ the knob values are in the text.
 *   text, size: the module; size 0 = strlen(text) (binary cubin/hsaco need the size).
 *   entry: the kernel symbol; NULL = the family's entry (NULL too: the module's only kernel).
 *   error: on failure, an optional message.
 *
 * Ownership: the buffers stay the callee's. ktune copies language, text, entry and error as soon
 * as the callback returns, then calls `release` (when set) once with the same user pointer and
 * struct, where the callee may free what it allocated for this call. Without `release` the
 * buffers need only stay valid until the callback's next call for the same family.
 *
 * Errors are values: return KTUNE_OK, or a KTUNE_ERR_* code (with `error` set if you like). A
 * failure fails that config only, as a compile error would: the family's other configs are still
 * tuned, and the report's candidate names the code and message.
 *
 * Calls: one at a time per family (ktune serialises them), from ktune's compile threads; once
 * per config of a tuning run, and once more when a later process loads a recorded winner (its
 * cached binary is found by the module's hash: the module must be the same for the same config).
 * The module goes through the code-object store (keyed by text, language and toolchain
 * versions), resource analysis and benchmarking like C++ source. `config` is the config string
 * ("BLOCK=256,VEC=2"), valid during the call. */
typedef struct ktune_config_source {
  size_t struct_size;
  const char* language;
  const char* text;
  size_t size;
  const char* entry;
  const char* error;
  void (*release)(void* user, struct ktune_config_source* src);
} ktune_config_source;
typedef int (*ktune_source_fn)(void* user, const char* config, ktune_config_source* out);

/* Optional per-run hook (Triton's reset_to_zero / restore_value; KernelSpec::before_run in C++):
 * called with the call's arguments and stream before every run of a config while a key is tuned
 * (warm-up and timed runs, outside the timed region) and once more before the launch that follows
 * the tuning; never on calls that do not tune. Zero accumulated outputs or restore in-place
 * inputs there. Called from the tuning thread while the call is in flight; return KTUNE_OK, or a
 * KTUNE_ERR_* code, which fails the candidate being run. */
typedef int (*ktune_before_run_fn)(void* user, const ktune_value* args, size_t num_args,
                                   ktune_stream stream);

/* A kernel family described by data.
 *  space_json: {"params": {"BLOCK": [128, 256], ...}, "constraints": ["BLOCK * VEC <= 2048"],
 *               "default": {"BLOCK": 256, ...}}; every knob reaches the kernel as -D KNOB=value.
 *  key: expressions over the integer arguments ("n", "pow2(n)"); problems with equal values
 *       share one tuning.
 *  grid, block: up to 3 expressions each (NULL = 1); shared_bytes: dynamic shared memory
 *       (NULL = 0). Expressions: integers, + - * / % ( ), comparisons, && || !, c ? a : b,
 *       cdiv(a, b), min(a, b), max(a, b), pow2(a); names are knobs, integer arguments,
 *       num_sms and warp_size. Constraints name knobs only. Checked at registration: an error
 *       names the expression and the column. */
typedef struct ktune_family_desc {
  size_t struct_size;      /* sizeof(ktune_family_desc) */
  const char* name;        /* [A-Za-z0-9_.-]+, names the family's tuning database */
  const char* source;      /* CUDA/HIP C++ source text */
  const char* entry;       /* extern "C" kernel name */
  const char* space_json;
  const ktune_arg* args;   /* the kernel's parameters in order */
  size_t num_args;
  const char* const* key;
  size_t num_key;
  const char* grid[3];
  const char* block[3];
  const char* shared_bytes;
  const char* const* compile_options; /* extra compiler flags */
  size_t num_compile_options;
  /* Per-config modules generated by the caller instead of `source` (see ktune_config_source);
   * source_user is passed back to every call and must outlive the tuner. Isolated benchmarking
   * (isolate = 1) cannot serve families registered through this API, with or without source_fn
   * (the ktune-worker process cannot rebuild their arguments): their tuning fails with that
   * reason, so leave isolation off for them. */
  ktune_source_fn source_fn;
  void* source_user;
  /* Optional, see ktune_before_run_fn; before_run_user is passed back to every call. A desc
   * from before these two fields existed (a smaller struct_size) is read without them. */
  ktune_before_run_fn before_run;
  void* before_run_user;
  /* Families registered through this API have no verifier: candidates are timed without checking
   * their results, and registering says so once. no_verify = 1 makes that choice explicit and
   * silences the note (KernelSpec::no_verify). Read only when struct_size covers it. */
  int no_verify;
  /* 1: the kernel runs KTUNE_PDL_WAIT() before it touches memory, so calls may launch it as a
   * programmatic dependent launch (KernelSpec::programmatic_wait). Read only when struct_size
   * covers it. */
  int programmatic_wait;
} ktune_family_desc;
#define KTUNE_FAMILY_DESC_INIT                                                              \
  { sizeof(ktune_family_desc), NULL, NULL, NULL, NULL, NULL, 0, NULL, 0, {NULL, NULL, NULL}, \
    {NULL, NULL, NULL}, NULL, NULL, 0, NULL, NULL, NULL, NULL, 0, 0 }

/* Registers a family on the tuner and opens its tuning database. */
KTUNE_API int ktune_family_register(ktune_tuner* t, const ktune_family_desc* desc,
                                    ktune_family** out);
/* Runs the family's kernel with `args` (count and types as registered) on `stream`, tuning
 * first when the key is new. */
KTUNE_API int ktune_family_call(ktune_family* f, const ktune_value* args, size_t num_args,
                                ktune_stream stream);
/* Forces a tuning run for the args' key; *report_json (may be NULL) receives the report. */
KTUNE_API int ktune_family_tune(ktune_family* f, const ktune_value* args, size_t num_args,
                                ktune_stream stream, char** report_json);
/* The key string of `args` ("pow2(n)=1024"), for ktune_report_json. */
KTUNE_API int ktune_family_key(ktune_family* f, const ktune_value* args, size_t num_args,
                               char** key);

/* ---------------------------------------------------------------- reports, database, cache */

/* A tuned key's report as a JSON object: family, key, winner, winner_source, origin,
 * median_ms, p20_ms, p80_ms, candidates[{config, source, status, reason, median_ms, ...}].
 * KTUNE_ERR_NOT_FOUND when the family is not registered here or the key was never tuned. */
KTUNE_API int ktune_report_json(ktune_tuner* t, const char* family, const char* key, char** json);
/* A registered family's tuning database as JSON text; merging such text into it; removing
 * a key (tuned again on its next call). */
KTUNE_API int ktune_db_export(ktune_tuner* t, const char* family, char** json);
KTUNE_API int ktune_db_import(ktune_tuner* t, const char* family, const char* json);
KTUNE_API int ktune_db_remove(ktune_tuner* t, const char* family, const char* key);
/* The code-object store's directory; removing every entry (recompiled on demand). */
KTUNE_API int ktune_cache_dir(ktune_tuner* t, char** dir);
KTUNE_API int ktune_cache_clear(ktune_tuner* t);
/* The ktune-worker executable this tuner starts when isolation is on: KTUNE_WORKER when set, else
 * beside the program, then beside libktune.so (<prefix>/bin for an installed package), then on
 * PATH. KTUNE_ERR_NOT_FOUND naming the places looked at. Free *path with ktune_free. */
KTUNE_API int ktune_worker_path(ktune_tuner* t, char** path);

/* ---------------------------------------------------------------- tuned ops (GPU backends) */

/* F8E4M3 / F8E5M2: FP8 GEMM inputs only (ktune_gemm's ab_dtype, layout "NT", sm_90a). */
enum {
  KTUNE_DTYPE_F32 = 0,
  KTUNE_DTYPE_F16 = 1,
  KTUNE_DTYPE_BF16 = 2,
  KTUNE_DTYPE_F8E4M3 = 3,
  KTUNE_DTYPE_F8E5M2 = 4
};

typedef struct ktune_rmsnorm_params {
  int32_t dtype;
  int64_t rows, cols;
  uint64_t y, x, weight;          /* weight 0 = none; y may equal x */
  uint64_t residual, residual_out; /* both 0 = no fused residual add */
  int64_t x_stride, y_stride;     /* elements; 0 = cols */
  float eps;
} ktune_rmsnorm_params;

typedef struct ktune_silu_mul_params {
  int32_t dtype;
  int64_t rows, d;
  uint64_t out, x; /* x is [rows, 2d]: gate then up */
  int64_t x_stride, out_stride;
} ktune_silu_mul_params;

typedef struct ktune_gemm_params {
  const char* layout;     /* "NN", "NT", "TN", "TT" (NULL = "NN") */
  int32_t ab_dtype;       /* KTUNE_DTYPE_F16, _BF16, _F8E4M3 or _F8E5M2 (layout "NT") */
  int32_t c_dtype;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;  /* 0 = dense */
  float alpha, beta;
  const char* activation; /* "none", "silu", "gelu", "silu_mul" (NULL = "none"); silu_mul: B
                             is [gate; up] (N rows), C gets N/2 columns, decode kernel only */
  uint64_t a, b, c, bias; /* bias 0 = none */
  uint64_t scale_a, scale_b; /* fp8: one device float each, the per-tensor dequantisation scales
                                (C = alpha * scale_a * scale_b * A * B + ...); 0 = 1.0 */
} ktune_gemm_params;

KTUNE_API int ktune_rmsnorm(ktune_tuner* t, const ktune_rmsnorm_params* p, ktune_stream s);
KTUNE_API int ktune_silu_mul(ktune_tuner* t, const ktune_silu_mul_params* p, ktune_stream s);
KTUNE_API int ktune_gemm(ktune_tuner* t, const ktune_gemm_params* p, ktune_stream s);

/* ---------------------------------------------------------------- memory */

KTUNE_API int ktune_malloc(ktune_tuner* t, size_t bytes, uint64_t* out);
KTUNE_API int ktune_mfree(ktune_tuner* t, uint64_t p);
KTUNE_API int ktune_memcpy_htod(ktune_tuner* t, uint64_t dst, const void* src, size_t bytes);
KTUNE_API int ktune_memcpy_dtoh(ktune_tuner* t, void* dst, uint64_t src, size_t bytes);
KTUNE_API int ktune_synchronize(ktune_tuner* t, ktune_stream s);

/* ---------------------------------------------------------------- simulated backend */

/* What a simulated kernel sees at a launch (backend "sim"; see <ktune/sim.hpp>). */
typedef struct ktune_sim_launch ktune_sim_launch;
KTUNE_API unsigned ktune_sim_grid(const ktune_sim_launch* l, int dim);
KTUNE_API unsigned ktune_sim_block(const ktune_sim_launch* l, int dim);
KTUNE_API int64_t ktune_sim_knob(const ktune_sim_launch* l, const char* name, int64_t fallback);
KTUNE_API const void* ktune_sim_arg(const ktune_sim_launch* l, size_t index);
KTUNE_API void* ktune_sim_host_ptr(const ktune_sim_launch* l, uint64_t device_ptr);
/* run: the kernel's effect (returns KTUNE_OK or an error code that fails the launch);
 * cost: simulated device milliseconds of the launch. Either may be NULL. */
typedef int (*ktune_sim_run_fn)(void* user, const ktune_sim_launch* l);
typedef double (*ktune_sim_cost_fn)(void* user, const ktune_sim_launch* l);
KTUNE_API int ktune_sim_register_kernel(ktune_tuner* t, const char* entry, ktune_sim_run_fn run,
                                        ktune_sim_cost_fn cost, void* user);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTUNE_KTUNE_H */
