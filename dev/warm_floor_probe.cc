// GPU machine, a probe for issue 34's one-shape warm target (bench/NOTES.md): what a process that
// runs one 4096^3 bf16 GEMM through cuBLASLt cannot avoid on this host, step by step, without
// ktune: the process's start (exec, loader), libcuda's load, cuInit, the primary context, three
// 32 MiB inputs (allocated and set), cuBLASLt's load and handle, its first heuristic query, the
// first launch (the kernel's lazy load) and a second one, each synchronised. Milliseconds from
// the shell's start (argv[1]: its epoch in ns, `date +%s%N`); the exit's cost is the shell's end
// minus the last mark. No CUDA library is linked: each is opened when its step starts.
// Build (dev machine): g++ -O2 -I/usr/local/cuda/include -o warm_floor_probe
//   dev/warm_floor_probe.cc -ldl -lpthread
#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>

namespace {

double t0_ms = 0;
double nowMs() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6 - t0_ms;
}

void* sym(void* lib, const char* name) {
  void* f = lib ? dlsym(lib, name) : nullptr;
  if (!f) {
    std::printf("FLOOR no symbol %s\n", name);
    std::exit(1);
  }
  return f;
}
#define SYM(lib, fn, name) reinterpret_cast<decltype(&fn)>(sym(lib, name))

void mark(const char* what) { std::printf("FLOOR %-26s %8.1f\n", what, nowMs()); }

}  // namespace

int main(int argc, char** argv) {
  t0_ms = argc > 1 ? std::atof(argv[1]) / 1e6 : 0;
  if (t0_ms == 0) t0_ms = nowMs();
  mark("main");
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  mark("libcuda loaded");
  const CUresult ir = SYM(cu, cuInit, "cuInit")(0);
  mark("cuInit");
  if (ir != CUDA_SUCCESS) {
    std::printf("FLOOR cuInit failed: %d\n", int(ir));
    return 1;
  }
  // PROBE_EARLY_LT=1: cuBLASLt's load, handle and first heuristic query on a thread started right
  // after cuInit, beside the context and the inputs (is the query's set-up context-free?).
  void* lt = nullptr;
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulHeuristicResult_t res[8];
  int got = 0;
  cublasStatus_t hs = CUBLAS_STATUS_NOT_INITIALIZED;
  const size_t n = 4096, bytes = n * n * 2, ws_bytes = 32u << 20;
  auto lt_steps = [&] {
    lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!lt) lt = dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!lt) lt = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
    mark("cublasLt loaded");
    SYM(lt, cublasLtCreate, "cublasLtCreate")(&h);
    mark("cublasLt handle");
    SYM(lt, cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate")(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t tr = CUBLAS_OP_T;  // the NT layout's A, as ktune's 4096^3 NT
    SYM(lt, cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute")(
        op, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof(tr));
    auto layout = SYM(lt, cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
    layout(&la, CUDA_R_16BF, n, n, n);
    layout(&lb, CUDA_R_16BF, n, n, n);
    layout(&lc, CUDA_R_16BF, n, n, n);
    cublasLtMatmulPreference_t pref;
    SYM(lt, cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate")(&pref);
    uint64_t ws_max = ws_bytes;
    SYM(lt, cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute")(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_max, sizeof(ws_max));
    hs =
        SYM(lt, cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic")(
            h, op, la, lb, lc, lc, pref, 8, res, &got);
    mark("first heuristic query");
  };
  const char* early_env = std::getenv("PROBE_EARLY_LT");
  const bool early = early_env && early_env[0] == '1';
  std::thread lt_thread;
  if (early) lt_thread = std::thread(lt_steps);
  CUdevice dev;
  CUcontext ctx;
  SYM(cu, cuDeviceGet, "cuDeviceGet")(&dev, 0);
  SYM(cu, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")(&ctx, dev);
  SYM(cu, cuCtxSetCurrent, "cuCtxSetCurrent")(ctx);
  CUstream s;
  SYM(cu, cuStreamCreate, "cuStreamCreate")(&s, CU_STREAM_NON_BLOCKING);
  mark("primary context");
  CUdeviceptr a, b, c, ws;
  auto alloc = SYM(cu, cuMemAlloc, "cuMemAlloc_v2");
  alloc(&a, bytes);
  alloc(&b, bytes);
  alloc(&c, bytes);
  alloc(&ws, ws_bytes);
  auto set16 = SYM(cu, cuMemsetD16, "cuMemsetD16_v2");
  set16(a, 0x3f80, n * n);  // 1.0 in bf16
  set16(b, 0x3f80, n * n);
  auto sync = SYM(cu, cuCtxSynchronize, "cuCtxSynchronize");
  sync();
  mark("inputs");
  if (early) lt_thread.join();
  else lt_steps();
  if (hs != CUBLAS_STATUS_SUCCESS || got == 0) {
    std::printf("FLOOR heuristic failed: status %d, %d algos\n", int(hs), got);
    return 1;
  }
  auto mm = SYM(lt, cublasLtMatmul, "cublasLtMatmul");
  const float alpha = 1, beta = 0;
  for (int i = 0; i < 2; ++i) {
    const cublasStatus_t ms = mm(h, op, &alpha, reinterpret_cast<void*>(a), la,
                                 reinterpret_cast<void*>(b), lb, &beta, reinterpret_cast<void*>(c),
                                 lc, reinterpret_cast<void*>(c), lc, &res[0].algo,
                                 reinterpret_cast<void*>(ws), ws_bytes, s);
    sync();
    if (ms != CUBLAS_STATUS_SUCCESS) std::printf("FLOOR matmul status %d\n", int(ms));
    mark(i == 0 ? "first launch + sync" : "second launch + sync");
  }
  std::printf("FLOOR algos %d\n", got);
  std::fflush(stdout);
  return 0;  // the driver's teardown runs at exit: the shell's end minus the last mark
}
