// clang-19 in CUDA mode for the NVIDIA LLVM IR / MLIR views: NVRTC's LLVM IR is opaque NVVM
// bitcode, so the views of an sm_* kernel come from clang compiling the same source.
#include "base/fs.h"
#include "compiler/llvm/clang_compiler.h"

#ifndef KTUNE_DEFAULT_CUDA_INCLUDE
#define KTUNE_DEFAULT_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

namespace ktune::clang_detail {

std::vector<std::string> cudaDeviceFlags(const std::string& arch, const std::string& include_dir) {
  std::string root = KTUNE_DEFAULT_CUDA_INCLUDE;
  root = root.substr(0, root.rfind("/include"));
  return {"-x", "cuda", "--cuda-gpu-arch=" + arch, "--cuda-device-only", "--cuda-path=" + root,
          // clang 19 knows CUDA up to 12.5; newer toolkits work for device code.
          "-Wno-unknown-cuda-version", "-O3", "-std=c++17", "-I" + include_dir, "-include",
          include_dir + "/ktune_clang_cuda_shims.h"};
}

// Cache-hint loads/stores that the CUDA headers declare only for nvcc/NVRTC (sm_32_intrinsics)
// and clang 19's CUDA wrapper lacks (float4; uint4/uint2 for the prelude's store_vec): the same
// PTX instructions, as inline asm.
static const char kClangCudaShims[] = R"(// ktune: what clang's CUDA mode lacks
#pragma once
static __device__ __forceinline__ float4 __ldcg(const float4* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
static __device__ __forceinline__ void __stcg(float4* p, float4 v) {
  asm volatile("st.global.cg.v4.f32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
static __device__ __forceinline__ void __stwb(uint4* p, uint4 v) {
  asm volatile("st.global.wb.v4.u32 [%0], {%1,%2,%3,%4};"
               :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
static __device__ __forceinline__ void __stwb(uint2* p, uint2 v) {
  asm volatile("st.global.wb.v2.u32 [%0], {%1,%2};" :: "l"(p), "r"(v.x), "r"(v.y) : "memory");
}
)";

Status writeCudaShims(const compiler_detail::TempDir& dir) {
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("ktune_clang_cuda_shims.h"), kClangCudaShims));
  if (pathExists(std::string(KTUNE_DEFAULT_CUDA_INCLUDE) + "/texture_fetch_functions.h"))
    return Status::Ok();
  return writeFileAtomic(dir.file("texture_fetch_functions.h"),
                         "// ktune: empty stand-in (CUDA 13 dropped this header)\n");
}

}  // namespace ktune::clang_detail
