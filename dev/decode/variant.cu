// One decode-kernel config as a probe variant: built with -DVNAME=<name> and the config's defines
// (DC_*, LAYOUT, DTYPE_*, HAS_BIAS, ACT); kd and the entry are renamed per variant (-Dkd=...,
// -Dktune_gemm_decode=...) so several configs link into one probe.
#include "templates/gemm/decode/decode.cuh"

extern "C" int VNAME(const void* A, const void* B, void* C, float* ws, unsigned* cnt, int M,
                     int N, int K, int grid, cudaStream_t st, int* threads, int* per_sm) {
  const int smem = kd::kWarps * kd::kBN * kd::kRedStride * 4;
  if (threads) *threads = kd::kThreads;
  if (per_sm) {
    cudaFuncSetAttribute(ktune_gemm_decode, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, ktune_gemm_decode, kd::kThreads, smem);
    return 0;
  }
  ktune_gemm_decode<<<grid, kd::kThreads, smem, st>>>(
      (const unsigned short*)A, (const unsigned short*)B, C, nullptr, ws, cnt, M, N, K, K, K, N,
      1.0f, 0.0f);
  return (int)cudaGetLastError();
}
