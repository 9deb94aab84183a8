// Probe: does a cuBLASLt matmul whose kernel was never run in this process break a global-mode
// stream capture (lazy module loading), alone or while another thread works in relaxed mode?
//   nvcc -O2 -o probe dev/capture_lazy_probe.cu -lcublasLt -lcuda
//   ./probe MODE ALGO     MODE: alone | warm | busy_blas | busy_malloc | busy_blas_warm | busy_same
//   (busy_same: the busy thread runs the captured shape's own algos, the captured one included)
// Prints one line: mode, algo, the matmul's status in the capture, end-capture's result.
#include <cublasLt.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

struct Gemm {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  void *da{}, *db{}, *dc{}, *ws{};
  size_t ws_bytes = 32 << 20;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  Gemm(cublasLtHandle_t h, int m, int n, int k) {
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    // Row-major C[m,n] = A[m,k] * B[n,k]^T as column-major C^T[n,m] = B[n,k] * A^T.
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn);
    cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, n, k);
    cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, m, k);
    cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, n, m, n);
    cudaMalloc(&da, size_t(n) * k * 2);
    cudaMalloc(&db, size_t(m) * k * 2);
    cudaMalloc(&dc, size_t(m) * n * 2);
    cudaMalloc(&ws, ws_bytes);
    cudaMemset(da, 0, size_t(n) * k * 2);
    cudaMemset(db, 0, size_t(m) * k * 2);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                         sizeof ws_bytes);
    algos.resize(16);
    int got = 0;
    cublasLtMatmulAlgoGetHeuristic(h, op, a, b, c, c, pref, 16, algos.data(), &got);
    algos.resize(got);
  }
  cublasStatus_t run(cublasLtHandle_t h, int i, cudaStream_t s) {
    float one = 1, zero = 0;
    return cublasLtMatmul(h, op, &one, da, a, db, b, &zero, dc, c, dc, c, &algos[i].algo, ws,
                          ws_bytes, s);
  }
};

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "alone";
  const int algo = argc > 2 ? std::atoi(argv[2]) : 0;
  cudaFree(nullptr);
  CUmoduleLoadingMode lm;
  cuModuleGetLoadingMode(&lm);
  cublasLtHandle_t h;
  cublasLtCreate(&h);
  Gemm g(h, 65, 256, 256);
  Gemm other(h, 512, 1024, 1024);  // the busy thread's work: other shapes, other kernels
  if (algo >= int(g.algos.size())) return std::printf("%s algo %d: only %zu algos\n", mode.c_str(), algo, g.algos.size()), 1;
  cudaStream_t s, s2;
  // argv[4] == "blocking": the captured stream is ordered with the legacy default stream.
  const bool blocking = argc > 4 && std::string(argv[4]) == "blocking";
  cudaStreamCreateWithFlags(&s, blocking ? cudaStreamDefault : cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  if (mode == "warm" || mode == "busy_blas_warm") {
    g.run(h, algo, s);
    cudaStreamSynchronize(s);
  }
  std::atomic<bool> stop{false}, started{false};
  int busy_iters = 0;
  std::thread busy;
  if (mode.rfind("busy", 0) == 0) {
    busy = std::thread([&] {
      cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&relaxed);
      cublasLtHandle_t h2;
      cublasLtCreate(&h2);
      for (int i = 0; !stop; ++i, ++busy_iters) {
        if (i == 1) started = true;  // the first run is under way: its loads overlap the capture
        if (mode == "busy_same") {
          g.run(h2, (algo + 1 + i) % g.algos.size(), s2);  // reaches `algo` after a few runs
          cudaStreamSynchronize(s2);
        } else if (mode == "busy_malloc") {
          void* p = nullptr;
          cudaMalloc(&p, 1 << 20);
          cudaFree(p);
        } else {
          other.run(h2, i % other.algos.size(), s2);
          cudaStreamSynchronize(s2);
        }
      }
      cublasLtDestroy(h2);
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(std::atoi(argc > 3 ? argv[3] : "0")));
  }
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  cublasStatus_t st = g.run(h, algo, s);
  cudaGraph_t graph = nullptr;
  cudaError_t end = cudaStreamEndCapture(s, &graph);
  stop = true;
  if (busy.joinable()) busy.join();
  std::printf("%-15s %s algo %d loading=%s matmul=%d end_capture=%d(%s) busy_iters=%d\n", mode.c_str(),
              blocking ? "blocking" : "nonblock", algo, lm == CU_MODULE_LAZY_LOADING ? "lazy" : "eager", int(st), int(end),
              cudaGetErrorName(end), busy_iters);
  return 0;
}
