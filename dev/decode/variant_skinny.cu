// The skinny kernel (templates/gemm/skinny) as a probe variant, for a same-process comparison:
// -DVNAME, the SK_* defines, kd/entry renamed like variant.cu.
#include "templates/gemm/skinny/skinny.cuh"

extern "C" int VNAME(const void* A, const void* B, void* C, float* ws, unsigned* cnt, int M,
                     int N, int K, int grid, cudaStream_t st, int* threads, int* per_sm) {
  (void)grid;
  const int smem = NUM_WARPS * 16 * SK_NT * (8 * SK_MT + 1) * 4;
  if (threads) *threads = ks::kThreads;
  if (per_sm) {
    *per_sm = 1;  // the grid is the kernel's own (tiles x SPLIT_K)
    return 0;
  }
  dim3 g((N + 16 * SK_NT - 1) / (16 * SK_NT), (M + 8 * SK_MT - 1) / (8 * SK_MT), SPLIT_K);
  ktune_gemm_skinny<<<g, ks::kThreads, smem, st>>>((const unsigned short*)A,
                                                  (const unsigned short*)B, C, nullptr, ws, cnt,
                                                  M, N, K, K, K, N, 1.0f, 0.0f);
  return (int)cudaGetLastError();
}
