// How many thread-block clusters can be resident at once for a persistent kernel shaped like the
// TMA GEMM (384 threads, one block per SM by shared memory), per cluster size. A persistent grid
// of SMs / cluster_size clusters only runs in one wave if this is at least that many.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void __launch_bounds__(384, 1) k(int* p) { if (p) p[threadIdx.x] = 0; }
int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s: %d SMs\n", prop.name, prop.multiProcessorCount);
  for (int smem : {0, 100 * 1024, 200 * 1024, 220 * 1024}) {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    for (int cs : {1, 2, 4}) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3(prop.multiProcessorCount / cs * cs);
      cfg.blockDim = dim3(384);
      cfg.dynamicSmemBytes = smem;
      cudaLaunchAttribute a[1];
      a[0].id = cudaLaunchAttributeClusterDimension;
      a[0].val.clusterDim.x = cs;
      a[0].val.clusterDim.y = 1;
      a[0].val.clusterDim.z = 1;
      cfg.attrs = a;
      cfg.numAttrs = 1;
      int n = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k, &cfg);
      std::printf("smem %6d B, cluster %d: max active clusters %d (%d blocks)%s%s\n", smem, cs, n,
                  n * cs, e ? " error: " : "", e ? cudaGetErrorString(e) : "");
    }
  }
}
