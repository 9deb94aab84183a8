// The fake libcuda.so.1 of the CUDA backend's unit tests (runtime_fake_cuda_test.cc,
// runtime_fake_cuda_pdl_test.cc): C source compiled at test time with the system C compiler into
// <tmp>/libcuda.so.1 (soname libcuda.so.1). A test dlopens it by absolute path first; the
// backend's dlopen("libcuda.so.1") then finds that already-loaded object by soname. The backend's
// driver connection is a process-wide singleton, so a process sees one fake, set up by the
// environment it had when the backend first opened: FAKE_CUDA_CC_MAJOR=N (default 9) and
// FAKE_CUDA_NO_LAUNCH_EX=1 (no cuLaunchKernelEx, as in drivers before 11.8).
#pragma once

#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "base/fs.h"
#include "base/status.h"
#include "base/subprocess.h"
#include "tests/support/tools.h"

namespace ktune {

inline constexpr const char* kFakeDriver = R"C(
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef int CUresult;
typedef unsigned long long CUdeviceptr;

int fake_requested_version = -1;   /* cudaVersion passed to cuGetProcAddress_v2 */
int fake_ctx_set_calls = 0;
int fake_launches = 0;
int fake_sticky = 0;               /* sticky error after a faulting launch */
unsigned fake_last_grid[3], fake_last_block[3], fake_last_shared;
int fake_dyn_shared_attr = 48 * 1024;
int fake_legacy_copies = 0;        /* synchronous copies: they run on the legacy stream */
void* fake_last_copy_stream = 0;   /* the stream of the last asynchronous host copy */
void* fake_last_launch_stream = 0;
int fake_ex_launches = 0;          /* cuLaunchKernelEx calls, and the attribute of the last one */
int fake_ex_num_attrs = -1, fake_ex_attr_id = -1, fake_ex_attr_value = -1;

static const char* err_name(CUresult r) {
  switch (r) {
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    default: return 0;
  }
}
CUresult cuGetErrorName(CUresult r, const char** s) { *s = err_name(r); return *s ? 0 : 1; }
CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == 700 ? "an illegal memory access was encountered" : err_name(r);
  return *s ? 0 : 1;
}
CUresult cuDriverGetVersion(int* v) { *v = 12040; return 0; }
CUresult cuInit(unsigned f) { (void)f; return 0; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return 0; }
CUresult cuDeviceGet(int* d, int i) { *d = i; return i == 0 ? 0 : 101; }
CUresult cuDeviceGetName(char* s, int len, int d) { (void)d; strncpy(s, "Fake H100", len); return 0; }
CUresult cuDeviceGetAttribute(int* v, int a, int d) {
  (void)d;
  switch (a) {
    case 1: *v = 1024; return 0;
    case 2: case 3: *v = 1024; return 0;
    case 4: *v = 64; return 0;
    case 5: *v = 2147483647; return 0;
    case 6: case 7: *v = 65535; return 0;
    case 8: *v = 49152; return 0;
    case 10: *v = 32; return 0;
    case 12: *v = 65536; return 0;
    case 13: *v = 1980000; return 0;
    case 16: *v = 132; return 0;
    case 36: *v = 2619000; return 0;
    case 37: *v = 5120; return 0;
    case 38: *v = 52428800; return 0;
    case 39: *v = 2048; return 0;
    case 75: *v = getenv("FAKE_CUDA_CC_MAJOR") ? atoi(getenv("FAKE_CUDA_CC_MAJOR")) : 9; return 0;
    case 76: *v = 0; return 0;
    case 81: *v = 233472; return 0;
    case 82: *v = 65536; return 0;
    case 97: *v = 232448; return 0;
    case 106: *v = 32; return 0;
    default: return 1;
  }
}
CUresult cuDeviceTotalMem_v2(size_t* b, int d) { (void)d; *b = (size_t)80 << 30; return 0; }
CUresult cuDeviceGetPCIBusId(char* s, int len, int d) { (void)d; strncpy(s, "0000:19:00.0", len); return 0; }
CUresult cuDevicePrimaryCtxRetain(void** c, int d) { (void)d; *c = (void*)0x1234; return 0; }
CUresult cuCtxSetCurrent(void* c) { (void)c; ++fake_ctx_set_calls; return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  if (n > ((size_t)1 << 40)) return 2;
  *p = (CUdeviceptr)(uintptr_t)malloc(n); return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void*)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* s, size_t n) { ++fake_legacy_copies; memcpy((void*)(uintptr_t)d, s, n); return fake_sticky; }
CUresult cuMemcpyDtoH_v2(void* d, CUdeviceptr s, size_t n) { ++fake_legacy_copies; memcpy(d, (void*)(uintptr_t)s, n); return fake_sticky; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, void* st) { fake_last_copy_stream = st; memcpy((void*)(uintptr_t)d, s, n); return fake_sticky; }
CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, void* st) { fake_last_copy_stream = st; memcpy(d, (void*)(uintptr_t)s, n); return fake_sticky; }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void* st) { (void)st; memcpy((void*)(uintptr_t)d, (void*)(uintptr_t)s, n); return fake_sticky; }
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void* st) { (void)st; memset((void*)(uintptr_t)d, v, n); return fake_sticky; }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void* st) {
  (void)st; unsigned* p = (unsigned*)(uintptr_t)d; for (size_t i = 0; i < n; ++i) p[i] = v; return fake_sticky;
}
CUresult cuStreamCreate(void** s, unsigned f) { (void)f; *s = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(void* s) { free(s); return 0; }
CUresult cuStreamSynchronize(void* s) { (void)s; return fake_sticky; }
CUresult cuStreamQuery(void* s) { (void)s; return fake_sticky; }
CUresult cuEventCreate(void** e, unsigned f) { (void)f; *e = calloc(1, sizeof(float)); return 0; }
CUresult cuEventDestroy_v2(void* e) { free(e); return 0; }
CUresult cuEventRecord(void* e, void* s) { (void)s; *(float*)e = (float)fake_launches; return fake_sticky; }
CUresult cuEventSynchronize(void* e) { (void)e; return fake_sticky; }
/* The 12.x-era entry point; _v2 is deliberately absent from this 12.4 fake. */
CUresult cuEventElapsedTime(float* ms, void* a, void* b) { *ms = 0.5f * (*(float*)b - *(float*)a); return 0; }
CUresult cuModuleLoadDataEx(void** m, const void* img, unsigned n, int* opts, void** vals) {
  if (strstr((const char*)img, "BROKEN")) {
    for (unsigned i = 0; i < n; ++i)
      if (opts[i] == 5) strcpy((char*)vals[i], "ptxas fatal   : line 4; syntax error");
    return 218;
  }
  *m = malloc(1); return 0;
}
CUresult cuModuleUnload(void* m) { free(m); return 0; }
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  (void)m; if (strcmp(name, "missing") == 0) return 500; *f = (void*)0x5678; return 0;
}
CUresult cuFuncGetAttribute(int* v, int a, void* f) {
  (void)f;
  switch (a) {
    case 0: *v = 1024; return 0; case 1: *v = 1024; return 0; case 3: *v = 0; return 0;
    case 4: *v = 40; return 0; case 5: *v = 70; return 0; case 6: *v = 90; return 0;
    case 8: *v = fake_dyn_shared_attr; return 0; default: return 1;
  }
}
CUresult cuFuncSetAttribute(void* f, int a, int v) { (void)f; if (a == 8) fake_dyn_shared_attr = v; return 0; }
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shm, void* st, void** args, void** extra) {
  (void)f; (void)args; (void)extra;
  if (fake_sticky) return fake_sticky;
  fake_last_launch_stream = st;
  ++fake_launches;
  fake_last_grid[0] = gx; fake_last_grid[1] = gy; fake_last_grid[2] = gz;
  fake_last_block[0] = bx; fake_last_block[1] = by; fake_last_block[2] = bz;
  fake_last_shared = shm;
  if (shm > (unsigned)fake_dyn_shared_attr) return 1;
  if (gx == 13) fake_sticky = 700;  /* "the kernel faults": reported asynchronously */
  return 0;
}
/* cuLaunchKernelEx under another symbol name: only cuGetProcAddress_v2 hands it out, and not
   with FAKE_CUDA_NO_LAUNCH_EX set (a driver older than 11.8). */
typedef struct { int id; char pad[4]; union { char b[64]; int i; } v; } FakeAttr;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, shm; void* st; FakeAttr* attrs; unsigned n;
} FakeLaunchConfig;
CUresult fake_cuLaunchKernelEx(const FakeLaunchConfig* c, void* f, void** args, void** extra) {
  (void)f; (void)args; (void)extra;
  if (fake_sticky) return fake_sticky;
  ++fake_ex_launches;
  fake_last_launch_stream = c->st;
  fake_last_grid[0] = c->gx; fake_last_grid[1] = c->gy; fake_last_grid[2] = c->gz;
  fake_last_block[0] = c->bx; fake_last_block[1] = c->by; fake_last_block[2] = c->bz;
  fake_last_shared = c->shm;
  fake_ex_num_attrs = (int)c->n;
  fake_ex_attr_id = c->n > 0 ? c->attrs[0].id : -1;
  fake_ex_attr_value = c->n > 0 ? c->attrs[0].v.i : -1;
  return 0;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* n, void* f, int b, size_t s) {
  (void)f; (void)s; *n = 2048 / b; return 0;
}
/* Clusters: the cluster dimension attribute is required; 120 blocks of at most 256 threads
   are resident, in whole clusters (a GPC-less model: what the test checks is the plumbing). */
unsigned fake_cluster_query[5];  /* cluster x, y, z, block x, shared of the last query */
CUresult cuOccupancyMaxActiveClusters(int* n, void* f, const FakeLaunchConfig* c) {
  (void)f;
  if (c->n != 1 || c->attrs[0].id != 4) return 1;
  const unsigned* dim = (const unsigned*)c->attrs[0].v.b;
  if (c->gx % dim[0] || c->gy % dim[1] || c->gz % dim[2]) return 1;
  fake_cluster_query[0] = dim[0]; fake_cluster_query[1] = dim[1]; fake_cluster_query[2] = dim[2];
  fake_cluster_query[3] = c->bx; fake_cluster_query[4] = c->shm;
  *n = c->bx > 256 ? 0 : 120 / (int)(dim[0] * dim[1] * dim[2]);
  return 0;
}

/* cuTensorMapEncodeTiled: the last call's swizzle, L2 promotion, rank and last dimension, stride
   and box side; the map's first word is the base. */
int fake_tmap_swizzle = -1, fake_tmap_l2 = -1, fake_tmap_rank = -1;
unsigned long long fake_tmap_outer_dim = 0, fake_tmap_outer_stride = 0;
unsigned fake_tmap_outer_box = 0;
CUresult cuTensorMapEncodeTiled(void* m, int dt, unsigned rank, void* base,
                                const unsigned long long* dims, const unsigned long long* strides,
                                const unsigned* box, const unsigned* es, int il, int sw, int l2,
                                int oob) {
  (void)dt; (void)es; (void)il; (void)oob;
  if ((rank != 2 && rank != 3) || sw < 0 || sw > 3 || l2 < 0 || l2 > 3) return 1;
  fake_tmap_swizzle = sw; fake_tmap_l2 = l2; fake_tmap_rank = (int)rank;
  fake_tmap_outer_dim = dims[rank - 1]; fake_tmap_outer_stride = strides[rank - 2];
  fake_tmap_outer_box = box[rank - 1];
  memset(m, 0, 128); memcpy(m, &base, sizeof base);
  return 0;
}

struct Entry { const char* name; void* fn; };
#define E(x) { #x, (void*)x }
static const struct Entry kEntries[] = {
  E(cuGetErrorName), E(cuGetErrorString), E(cuInit), E(cuDeviceGetCount), E(cuDeviceGet),
  E(cuDeviceGetName), E(cuDeviceGetAttribute), {"cuDeviceTotalMem", (void*)cuDeviceTotalMem_v2},
  E(cuDeviceGetPCIBusId), E(cuDevicePrimaryCtxRetain), E(cuCtxSetCurrent),
  {"cuMemAlloc", (void*)cuMemAlloc_v2}, {"cuMemFree", (void*)cuMemFree_v2},
  {"cuMemcpyHtoD", (void*)cuMemcpyHtoD_v2}, {"cuMemcpyDtoH", (void*)cuMemcpyDtoH_v2},
  {"cuMemcpyDtoDAsync", (void*)cuMemcpyDtoDAsync_v2}, E(cuMemsetD8Async), E(cuMemsetD32Async),
  {"cuMemcpyHtoDAsync", (void*)cuMemcpyHtoDAsync_v2},
  {"cuMemcpyDtoHAsync", (void*)cuMemcpyDtoHAsync_v2},
  E(cuStreamCreate), {"cuStreamDestroy", (void*)cuStreamDestroy_v2}, E(cuStreamSynchronize),
  E(cuStreamQuery), E(cuEventCreate), {"cuEventDestroy", (void*)cuEventDestroy_v2},
  E(cuEventRecord), E(cuEventSynchronize), E(cuEventElapsedTime), E(cuModuleLoadDataEx),
  E(cuModuleUnload), E(cuModuleGetFunction), E(cuFuncGetAttribute), E(cuFuncSetAttribute),
  E(cuLaunchKernel), E(cuOccupancyMaxActiveBlocksPerMultiprocessor),
  {"cuLaunchKernelEx", (void*)fake_cuLaunchKernelEx}, E(cuOccupancyMaxActiveClusters),
  E(cuTensorMapEncodeTiled),
};
CUresult cuGetProcAddress_v2(const char* sym, void** fn, int version, unsigned long long flags,
                             int* status) {
  fake_requested_version = version;
  if (flags != 1) return 1;  /* the backend must ask for legacy-stream entry points */
  if (strcmp(sym, "cuLaunchKernelEx") == 0 && getenv("FAKE_CUDA_NO_LAUNCH_EX")) {
    *fn = 0; if (status) *status = 1; return 500;
  }
  for (size_t i = 0; i < sizeof(kEntries) / sizeof(kEntries[0]); ++i) {
    if (strcmp(kEntries[i].name, sym) == 0) { *fn = kEntries[i].fn; if (status) *status = 0; return 0; }
  }
  *fn = 0; if (status) *status = 1; return 500;
}
)C";

// Builds the fake into a new temporary directory and returns that directory (holding
// libcuda.so.1 and fake_cuda.c); kUnavailable when no C compiler is installed.
inline Expected<std::string> buildFakeCuda() {
  std::string cc = findProgram("cc");
  if (cc.empty()) cc = findProgram("gcc");
  if (cc.empty()) cc = findProgram("clang");
  if (cc.empty()) return Status::Unavailable("no C compiler (cc/gcc/clang) to build the fake libcuda");
  char tmpl[] = "/tmp/ktune-fakecuda-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return Status::Unavailable("mkdtemp failed");
  const std::string dir = tmpl;
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir + "/fake_cuda.c", kFakeDriver));
  KTUNE_ASSIGN_OR_RETURN(auto r, runProcess({cc, "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1",
                                              "-o", dir + "/libcuda.so.1", dir + "/fake_cuda.c"},
                                             "", 60000));
  if (r.exit_code != 0) return Status::Internal("building the fake libcuda failed: " + r.err);
  return dir;
}

// A test suite's fake libcuda: its directory; "" with the reason to skip in *skip when no C
// compiler is installed, or "" after a failed expectation when the build itself failed.
inline std::string fakeCudaForSuite(std::string* skip) {
  auto built = buildFakeCuda();
  if (!built.ok() && built.status().code() == Code::kUnavailable) {
    *skip = built.status().message();
    return "";
  }
  EXPECT_TRUE(built.ok()) << built.status().toString();
  return built.ok() ? *built : "";
}

}  // namespace ktune
