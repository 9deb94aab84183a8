// host_cost_bench's launch variants (bench/host_cost_bench.cc): the raw driver launches and the
// Backend's, the registration API's tuned noop family and its winner launched outside the engine,
// the data-registered family through the C++ handle and the C API, and the tuned row-wise ops.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autotune/database.h"
#include "bench/call_fixtures.h"
#include "bench/host_cost.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "ops/buffers.h"
#include "ops/rowwise.h"
#include "runtime/backend.h"

namespace ktune::hostcost {

// A packing candidate for backend_pack_inline: fixed inline storage, typed stores (memcpy of a
// constant size compiles to a move), the pointer array filled as it goes; no call into libc.
struct InlineArgs {
  alignas(16) unsigned char st[256];
  void* ptrs[32];
  size_t used = 0;
  int n = 0;
  template <class T>
  InlineArgs& add(const T& x) {
    used = (used + alignof(T) - 1) / alignof(T) * alignof(T);
    std::memcpy(st + used, &x, sizeof(T));
    ptrs[n++] = st + used;
    used += sizeof(T);
    return *this;
  }
};

// The noop kernels' two arguments (buf, 1000) as cuLaunchKernel takes them, prepared once.
struct RawArgs {
  DevicePtr p = 0;
  long long n = 1000;
  void* args[2];
};
inline std::shared_ptr<RawArgs> rawArgs(DevicePtr buf) {
  auto r = std::make_shared<RawArgs>();
  r->p = buf;
  r->args[0] = &r->p;
  r->args[1] = &r->n;
  return r;
}

// raw, raw_aa, raw_gpa, backend, backend_pack: the same kernel of the same code object, the same
// grid, block and argument values.
inline Status addRawVariants(Bench& B, std::vector<Variant>& v, DevicePtr buf) {
  auto rn = rawArgs(buf);
  auto raw = [&B, rn](int) {
    return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr), "cuLaunchKernel");
  };
  v.push_back({"raw", raw, "cuLaunchKernel, 2 args (dlsym)"});
  v.push_back({"raw_aa", raw, "the same again (A/A control)"});
  // A caller whose arguments change writes them before each launch: the same launch with the two
  // values stored again first (same bytes, same addresses). Against `raw` it shows what writing
  // the memory the driver reads costs, apart from any packing work.
  v.push_back({"raw_write", [&B, rn, buf](int) {
                 volatile DevicePtr* p = &rn->p;
                 volatile long long* n = &rn->n;
                 *p = buf;
                 *n = 1000;
                 return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel, its 2 argument values stored again before each call"});
  // What the packing's CPU work does to the launch after it (backend_pack_other reads 1.1-1.2x
  // while Backend::launch of a block packed once reads 1.0x): the same raw launch after pieces of
  // that work. libc memcpy of 8 bytes twice (through a pointer: not inlined); the same two values
  // stored by plain code with their pointer array; a KernelArgs packed (clear, add, add, data);
  // and a heap allocation freed again.
  struct Scratch {
    unsigned char bytes[64];
    void* ptrs[2];
  };
  auto sc = std::make_shared<Scratch>();
  static void* (*volatile libc_memcpy)(void*, const void*, size_t) = &std::memcpy;
  v.push_back({"raw_after_memcpy", [&B, rn, sc](int) {
                 libc_memcpy(sc->bytes, &rn->p, 8);
                 libc_memcpy(sc->bytes + 8, &rn->n, 8);
                 return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel after two libc memcpy calls of 8 bytes"});
  v.push_back({"raw_after_stores", [&B, rn, sc](int) {
                 volatile DevicePtr* d0 = reinterpret_cast<volatile DevicePtr*>(sc->bytes);
                 volatile long long* d1 = reinterpret_cast<volatile long long*>(sc->bytes + 8);
                 *d0 = rn->p;
                 *d1 = rn->n;
                 volatile void** pp = const_cast<volatile void**>(sc->ptrs);
                 pp[0] = sc->bytes;
                 pp[1] = sc->bytes + 8;
                 return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel after storing the values and their pointers by plain code"});
  // Suspect: libc's vector-register string functions (AVX-512 variants use xmm16-31, which puts
  // that register state in use for the rest of the thread's life; a host that saves and restores
  // it around every trap into its kernel then pays for it on each launch). A libc memset of 16
  // bytes, and one AVX-512 instruction on xmm16 alone, each before the same raw launch.
  static void* (*volatile libc_memset)(void*, int, size_t) = &std::memset;
  v.push_back({"raw_after_memset16", [&B, rn, sc](int) {
                 libc_memset(sc->bytes + 16, 0, 16);
                 return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel after a libc memset of 16 bytes"});
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    v.push_back({"raw_after_xmm16", [&B, rn](int) {
                   asm volatile("vpxord %%xmm16, %%xmm16, %%xmm16" ::: "memory");
                   return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                             "cuLaunchKernel");
                 }, "cuLaunchKernel after one AVX-512 instruction on xmm16"});
  }
#endif
  auto kc = std::make_shared<KernelArgs>();
  v.push_back({"raw_after_pack", [&B, rn, kc, buf](int) {
                 kc->clear();
                 kc->add(buf).add(1000LL);
                 (void)kc->data();
                 return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel after packing a KernelArgs it does not use"});
  v.push_back({"raw_after_malloc", [&B, rn](int) {
                 void* volatile m = std::malloc(48);
                 std::free(m);
                 return ok(B.drv.launch(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel after a malloc/free pair"});
  if (B.drv.launch_gpa) {
    v.push_back({"raw_gpa", [&B, rn](int) {
                   return ok(B.drv.launch_gpa(B.noop2, 1, 1, 1, 64, 1, 1, 0, nullptr, rn->args, nullptr),
                             "cuLaunchKernel");
                 }, "cuLaunchKernel via cuGetProcAddress_v2 (as ktune)"});
  }
  KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, B.be->loadModule(B.image));
  KTUNE_ASSIGN_OR_RETURN(FunctionHandle fn, B.be->getFunction(m, "ktune_noop2"));
  auto packed = std::make_shared<KernelArgs>();
  packed->add(buf).add(1000LL);
  v.push_back({"backend", [&B, fn, packed](int) {
                 return B.be->launch(fn, {1, 1, 1}, {64, 1, 1}, 0, packed->data());
               }, "Backend::launch, args packed once"});
  auto ka = std::make_shared<KernelArgs>();
  // Packing per call into one object, launching the block packed once: the packing's CPU work
  // without the driver reading freshly written memory.
  auto kb = std::make_shared<KernelArgs>();
  v.push_back({"backend_pack_other", [&B, fn, kb, packed, buf](int) {
                 kb->clear();
                 kb->add(buf).add(1000LL);
                 (void)kb->data();
                 return B.be->launch(fn, {1, 1, 1}, {64, 1, 1}, 0, packed->data());
               }, "Backend::launch of the block packed once, after packing another per call"});
  auto ia = std::make_shared<InlineArgs>();
  v.push_back({"backend_pack_inline", [&B, fn, ia, buf](int) {
                 ia->used = 0;
                 ia->n = 0;
                 ia->add(buf).add(1000LL);
                 return B.be->launch(fn, {1, 1, 1}, {64, 1, 1}, 0, ia->ptrs);
               }, "Backend::launch, args packed per call into inline storage by typed stores"});
  v.push_back({"backend_pack", [&B, fn, ka, buf](int) {
                 ka->clear();
                 ka->add(buf).add(1000LL);
                 return B.be->launch(fn, {1, 1, 1}, {64, 1, 1}, 0, ka->data());
               }, "Backend::launch, args packed per call"});
  return Status::Ok();
}

// The registration family's own winner, outside the engine: its code object (from the store the
// tuning run wrote), block size and argument values, launched raw (cuLaunchKernel) and through
// Backend::launch with the arguments packed once. Against `raw` they show what the family's kernel
// costs the driver; against `registration` what the engine's call adds on top.
inline Status addFamilyFnVariants(Bench& B, std::vector<Variant>& v, Engine& tuner,
                           const Family<bench::Noop>& fam, DevicePtr buf) {
  const bench::Noop p{buf, 1000};
  KTUNE_RETURN_IF_ERROR(fam(p));
  KTUNE_RETURN_IF_ERROR(B.be->synchronize());
  KTUNE_ASSIGN_OR_RETURN(KeyReport sel, fam.lookup(p));
  TuningDatabase* db = tuner.database(fam.name());
  auto e = db ? db->lookup(sel.key) : std::nullopt;
  std::string co_key;
  if (e)
    for (const CandidateResult& c : e->candidates)
      if (c.config == sel.winner && !c.code_object_key.empty()) co_key = c.code_object_key;
  if (co_key.empty()) return Status::NotFound("no code object recorded for " + sel.winner);
  KTUNE_ASSIGN_OR_RETURN(CodeObject co, tuner.store().get(co_key));
  KTUNE_ASSIGN_OR_RETURN(Config cfg, Config::parse(sel.winner));
  const unsigned threads = unsigned(cfg.getInt("THREADS"));
  void* mod = nullptr;
  void* fn = nullptr;
  if (B.drv.load(&mod, co.binary.data()) != 0 || B.drv.get(&fn, mod, "ktune_bench_noop") != 0)
    return Status::LaunchError("loading the family's code object raw failed");
  auto rn = rawArgs(buf);
  v.push_back({"family_raw", [&B, rn, fn, threads](int) {
                 return ok(B.drv.launch(fn, 1, 1, 1, threads, 1, 1, 0, nullptr, rn->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel of the family's winner (" + sel.winner + ")"});
  KTUNE_ASSIGN_OR_RETURN(ModuleHandle m, B.be->loadModule(co.binary));
  KTUNE_ASSIGN_OR_RETURN(FunctionHandle f, B.be->getFunction(m, "ktune_bench_noop"));
  auto packed = std::make_shared<KernelArgs>();
  packed->add(buf).add(1000LL);
  v.push_back({"family_backend", [&B, f, packed, threads](int) {
                 return B.be->launch(f, {1, 1, 1}, {threads, 1, 1}, 0, packed->data());
               }, "Backend::launch of the family's winner, args packed once"});
  return Status::Ok();
}

// raw variants, registration, cxx_data, c_api, raw_gemm_args.
inline Status addLaunchVariants(Bench& B, std::vector<Variant>& v) {
  KTUNE_ASSIGN_OR_RETURN(DevicePtr buf, B.be->alloc(4096));
  KTUNE_RETURN_IF_ERROR(addRawVariants(B, v, buf));
  KTUNE_ASSIGN_OR_RETURN(auto tuner, tunerFor(B, "noop", 0));
  KTUNE_ASSIGN_OR_RETURN(Family<bench::Noop> fam, tuner->add(bench::noopFamily("bench_noop")));
  v.push_back({"registration", [tuner, fam, buf](int) mutable { return fam(bench::Noop{buf, 1000}); },
               "TypedKernelSpec<Noop> call"});
  if (Status s = addFamilyFnVariants(B, v, *tuner, fam, buf); !s.ok())
    std::fprintf(stderr, "family_raw / family_backend skipped: %s\n", s.toString().c_str());
  auto data = std::make_shared<bench::DataFamily>(bench::makeDataFamily());
  if (data->skip.empty()) {
    v.push_back({"cxx_data", [data](int) {
                   const ktune::Value vals[] = {ktune::Value::ptr(data->buf), ktune::Value::i64(1000)};
                   return data->kernel(vals, 2);
                 }, "ktune::Kernel (registered from data)"});
    v.push_back({"c_api", [data](int) {
                   ktune_value vals[2];
                   bench::noopValues(vals, data->buf);
                   return ktune_family_call(data->f, vals, 2, nullptr) == KTUNE_OK
                              ? Status::Ok() : Status::LaunchError(ktune_last_error());
                 }, "ktune_family_call"});
  } else {
    std::fprintf(stderr, "C API variants skipped: %s\n", data->skip.c_str());
  }
  auto ga = std::make_shared<GemmArgs>();
  for (int i = 0; i < 6; ++i) ga->ptr[i] = buf;
  ga->bind();
  v.push_back({"raw_gemm_args", [&B, ga](int) {
                 return ok(B.drv.launch(B.gemm_args, 1, 1, 1, 128, 1, 1, 0, nullptr, ga->args, nullptr),
                           "cuLaunchKernel");
               }, "cuLaunchKernel, the GEMM kernels' 18 parameters (3 tensor maps)"});
  return Status::Ok();
}

inline void addRowwiseVariants(Bench& B, std::vector<Variant>& v) {
  auto tuner = tunerFor(B, "rowwise", 0);
  if (!tuner.ok() || !registerRowwiseOps(**tuner).ok()) return;
  auto x = B.be->alloc(size_t(4096) * 8192 * 2);
  auto y = B.be->alloc(size_t(4096) * 8192 * 2);
  auto w = B.be->alloc(size_t(8192) * 2);
  if (!x.ok() || !y.ok() || !w.ok()) return;
  (void)fillRandom(*B.be, *x, DType::kBF16, 4096 * 8192, 1);
  (void)fillRandom(*B.be, *w, DType::kBF16, 8192, 2);
  RmsNormArgs ra;
  ra.rows = 4096;
  ra.cols = 4096;
  ra.x = *x;
  ra.y = *y;
  ra.weight = *w;
  SiluMulArgs sa;
  sa.rows = 4096;
  sa.d = 4096;
  sa.x = *x;
  sa.out = *y;
  std::shared_ptr<Engine> t = *tuner;
  if (rmsnorm(*t, ra).ok() && siluMul(*t, sa).ok() && B.be->synchronize().ok()) {
    v.push_back({"rmsnorm", [t, ra](int) { return rmsnorm(*t, ra); }, "bf16 4096x4096"});
    v.push_back({"silu_mul", [t, sa](int) { return siluMul(*t, sa); }, "bf16 4096x2x4096"});
    auto ops = RowwiseOps::create(*t);
    if (ops.ok()) {
      std::shared_ptr<RowwiseOps> o(std::move(ops).value());
      v.push_back({"rmsnorm_ops", [t, o, ra](int) { return o->rmsnorm(ra); }, "RowwiseOps::rmsnorm"});
      v.push_back({"silu_mul_ops", [t, o, sa](int) { return o->siluMul(sa); }, "RowwiseOps::siluMul"});
    }
  }
}

}  // namespace ktune::hostcost
