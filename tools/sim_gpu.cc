#include "tools/sim_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bench/fair/peers.h"
#include "base/dtype.h"
#include "compiler/sim/sim_compiler.h"
#include "runtime/sim/sim_backend.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"

namespace ktune::cli {
namespace {

namespace rw = rowwise;

// The simulated device's throughput (an H100-like part): what the cost model divides by.
constexpr double kBytesPerMs = 3.0e9;    // 3 TB/s
constexpr double kFlopsPerMs = 7.5e11;   // 750 TFLOP/s
constexpr double kLaunchMs = 0.003;
constexpr int kSms = 132;
// GEMMs larger than this are not computed on the host (the suite's shapes would take hours):
// every candidate and the reference then write zeros, so verification still compares like
// with like and the timing model is unchanged.
constexpr double kHostGemmMaxFlops = 2.0 * 512 * 512 * 512;

DeviceInfo simDevice() {
  DeviceInfo d;
  d.name = "simulated H100-like (KTUNE_BACKEND=sim)";
  d.arch = "sm_90a";
  d.multiprocessors = kSms;
  d.warp_size = 32;
  d.max_threads_per_block = 1024;
  d.max_threads_per_sm = 2048;
  d.shared_per_block = 48 << 10;
  d.shared_per_block_optin = 227 << 10;
  d.shared_per_sm = 228 << 10;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.l2_bytes = 1 << 20;  // small: the L2 flush buffer is host memory here
  return d;
}

// Row-wise kernels move bytes: time = bytes / bandwidth / efficiency, where 16-byte accesses and
// a block of 128-256 threads are the most efficient (the shape real hardware shows).
double rowwiseCost(const SimLaunch& l, double bytes_per_elem_moved, int64_t elems) {
  const double elem = l.define("DTYPE") == int(rw::RowDType::kF32) ? 4.0 : 2.0;
  const double vec_bytes = double(l.define("VEC", 1)) * elem;
  const double vec_eff = std::sqrt(std::min(1.0, vec_bytes / 16.0));
  const double threads = double(std::max<int64_t>(l.define("THREADS", 256), 1));
  const double thr_eff = 1.0 - 0.06 * std::fabs(std::log2(threads / 192.0));
  const double eff = std::max(0.05, vec_eff * thr_eff);
  return kLaunchMs + double(elems) * bytes_per_elem_moved * elem / kBytesPerMs / eff;
}

gemm::GemmShape shapeOf(const SimLaunch& l) {
  gemm::GemmShape s;
  s.layout = static_cast<gemm::Layout>(l.define("LAYOUT"));
  s.ab = static_cast<gemm::ElemType>(l.define("DTYPE_AB", static_cast<int>(gemm::ElemType::kBF16)));
  s.c = static_cast<gemm::ElemType>(l.define("DTYPE_C", static_cast<int>(gemm::ElemType::kBF16)));
  s.has_bias = l.define("HAS_BIAS") != 0;
  s.act = static_cast<gemm::Activation>(l.define("ACT"));
  s.m = l.arg<int32_t>(6);
  s.n = l.arg<int32_t>(7);
  s.k = l.arg<int32_t>(8);
  s.lda = l.arg<int64_t>(9);
  s.ldb = l.arg<int64_t>(10);
  s.ldc = l.arg<int64_t>(11);
  s.alpha = l.arg<float>(12);
  s.beta = l.arg<float>(13);
  return s;
}

std::vector<float> readFloats(SimBackend* b, DevicePtr p, DType t, int64_t n) {
  std::vector<float> out(size_t(std::max<int64_t>(n, 0)));
  const void* host = b->hostPtr(p);
  for (int64_t i = 0; host && i < n; ++i) out[size_t(i)] = float(loadAsDouble(host, t, i));
  return out;
}

// The TMA kernel's per-tensor scale (argument `i`: a device float, null = 1), as it applies it.
float simScale(const SimLaunch& l, size_t i) {
  if (l.entry != gemm::entryName(gemm::KernelKind::kTma)) return 1.0f;
  const void* p = l.backend->hostPtr(l.arg<DevicePtr>(i));
  float v = 1.0f;
  if (p) std::memcpy(&v, p, sizeof(v));
  return v;
}

Status hostGemm(const SimLaunch& l) {
  gemm::GemmShape s = shapeOf(l);
  s.alpha *= simScale(l, 18) * simScale(l, 19);  // fp8 dequantisation scales (tma.cuh)
  void* c = l.backend->hostPtr(l.arg<DevicePtr>(2));
  if (!c) return Status::DeviceFault("sim gemm: C is not a device allocation");
  const DType ct = s.c;
  if (2.0 * double(s.m) * double(s.n) * double(s.k) > kHostGemmMaxFlops) {
    // Zeros written in place (all-zero bits in every float type): an M x N buffer of doubles per
    // launch was a fresh allocation faulted in each time.
    const size_t e = sizeOf(ct);
    for (int64_t i = 0; i < s.m; ++i)
      std::memset(static_cast<unsigned char*>(c) + size_t(i * s.ldc) * e, 0,
                  size_t(gemm::outCols(s)) * e);
    return Status::Ok();
  }
  std::vector<double> out(size_t(s.m * s.n), 0.0);
  {
    const DType ab = s.ab;
    auto a = readFloats(l.backend, l.arg<DevicePtr>(0), ab, gemm::storedRowsA(s) * s.lda);
    auto b = readFloats(l.backend, l.arg<DevicePtr>(1), ab, gemm::storedRowsB(s) * s.ldb);
    std::vector<float> cin, bias;
    if (s.beta != 0.0f) cin = readFloats(l.backend, l.arg<DevicePtr>(2), ct, s.m * s.ldc);
    if (s.has_bias) bias = readFloats(l.backend, l.arg<DevicePtr>(3), ct, s.n);
    out = gemm::reference(s, a.data(), b.data(), cin.empty() ? nullptr : cin.data(),
                          bias.empty() ? nullptr : bias.data());
  }
  const int64_t cols = gemm::outCols(s);  // N/2 for the gate/up pair (act silu_mul)
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < cols; ++j) storeFromDouble(c, ct, i * s.ldc + j, out[size_t(i * cols + j)]);
  return Status::Ok();
}

// GEMM time: FLOPs over peak, divided by the share of SMs the tile grid keeps busy (wave
// quantisation) and by a tile efficiency that grows with the tile's arithmetic intensity.
double gemmCost(const SimLaunch& l) {
  const gemm::GemmShape s = shapeOf(l);
  const double bm = double(std::max<int64_t>(l.define("BLOCK_M", 64), 1));
  const double bn = double(std::max<int64_t>(l.define("BLOCK_N", 64), 1));
  const double split = double(std::max<int64_t>(l.define("SPLIT_K", 1), 1));
  const double tiles = std::ceil(double(s.m) / bm) * std::ceil(double(s.n) / bn) * split;
  const double waves = std::ceil(tiles / kSms);
  const double busy = tiles / (waves * kSms);
  const double tile_eff = (bm * bn) / (bm * bn + 24.0 * (bm + bn));
  const double kind_eff = l.entry.find("tma") != std::string::npos     ? 1.0
                          : l.entry.find("wgmma") != std::string::npos ? 0.9
                                                                       : 0.7;
  // FP8 tensor cores do twice the bf16 rate on half the input bytes.
  const double fp8 = isFp8(s.ab) ? 0.5 : 1.0;
  const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k) * fp8;
  const double bytes = 2.0 * double(s.m * s.k + s.n * s.k) * fp8 + 2.0 * double(s.m * s.n);
  const double compute = flops / kFlopsPerMs / (busy * tile_eff * kind_eff);
  return kLaunchMs + std::max(compute, bytes / kBytesPerMs) + 0.002 * (split - 1);
}

}  // namespace

// One row of a host buffer to doubles and back, with the common types' conversions inlined (a
// tuning run launches a kernel hundreds of times; loadAsDouble's per-element dispatch dominated).
void loadRow(const void* base, DType t, int64_t at, size_t n, double* out) {
  const auto* b = static_cast<const unsigned char*>(base);
  if (t == DType::kBF16 || t == DType::kF16) {
    for (size_t j = 0; j < n; ++j) {
      uint16_t h;
      std::memcpy(&h, b + 2 * (at + int64_t(j)), 2);
      out[j] = t == DType::kBF16 ? bf16ToFloat(h) : halfToFloat(h);
    }
  } else if (t == DType::kF32) {
    for (size_t j = 0; j < n; ++j) {
      float f;
      std::memcpy(&f, b + 4 * (at + int64_t(j)), 4);
      out[j] = f;
    }
  } else {
    for (size_t j = 0; j < n; ++j) out[j] = loadAsDouble(base, t, at + int64_t(j));
  }
}

void storeRow(void* base, DType t, int64_t at, size_t n, const double* in) {
  auto* b = static_cast<unsigned char*>(base);
  if (t == DType::kBF16 || t == DType::kF16) {
    for (size_t j = 0; j < n; ++j) {
      const float f = static_cast<float>(in[j]);
      const uint16_t h = t == DType::kBF16 ? floatToBf16(f) : floatToHalf(f);
      std::memcpy(b + 2 * (at + int64_t(j)), &h, 2);
    }
  } else if (t == DType::kF32) {
    for (size_t j = 0; j < n; ++j) {
      const float f = static_cast<float>(in[j]);
      std::memcpy(b + 4 * (at + int64_t(j)), &f, 4);
    }
  } else {
    for (size_t j = 0; j < n; ++j) storeFromDouble(base, t, at + int64_t(j), in[j]);
  }
}

// A fingerprint of everything a host kernel's result depends on (its scalars and input bytes),
// four independent multiply-xor lanes over 8-byte words: about a byte per cycle.
class Fingerprint {
 public:
  void add(int64_t v) { mix(0, uint64_t(v)); }
  void add(const void* p, size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(p);
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32)
      for (int l = 0; l < 4; ++l) {
        uint64_t w;
        std::memcpy(&w, b + i + 8 * l, 8);
        mix(l, w);
      }
    for (; i < bytes; ++i) mix(0, b[i]);
    add(int64_t(bytes));
  }
  uint64_t value() const { return h_[0] ^ (h_[1] * 3) ^ (h_[2] * 5) ^ (h_[3] * 7); }

 private:
  void mix(int l, uint64_t w) {
    uint64_t h = (h_[l] ^ w) * 0x9E3779B97F4A7C15ull;
    h_[l] = h ^ (h >> 29);
  }
  uint64_t h_[4] = {1, 2, 3, 4};
};

// The tuner launches every candidate tens of times over the same inputs, and the host result
// does not depend on the config: the last result per thread is kept under its fingerprint and
// copied out when a launch has the same one (a 4096x4096 RMSNorm: a copy instead of ~0.1 s of
// arithmetic). Outputs are stored as dense rows (rows x cols elements of each output).
struct RowMemo {
  uint64_t fp = 0;
  bool valid = false;
  std::vector<unsigned char> out[2];
};

void copyRows(unsigned char* dst, int64_t dst_stride, const unsigned char* src, int64_t src_stride,
              int64_t rows, size_t row_bytes) {
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(dst + size_t(i * dst_stride), src + size_t(i * src_stride), row_bytes);
}

// The host kernels work one row at a time on per-thread buffers of one row: converting a whole
// 4096x4096 tensor to doubles on every launch allocated (and the allocator mmap'ed, faulted in and
// unmapped) hundreds of MiB per timed run, which made a simulated tune of a real size take minutes.
Status simRmsNorm(const SimLaunch& l) {
  rw::RmsNormProblem p;
  p.dtype = static_cast<rw::RowDType>(l.define("DTYPE"));
  p.has_weight = l.define("HAS_WEIGHT") != 0;
  p.has_residual = l.define("HAS_RESIDUAL") != 0;
  const auto y = l.arg<DevicePtr>(0), x = l.arg<DevicePtr>(1), w = l.arg<DevicePtr>(2),
             r = l.arg<DevicePtr>(3), ro = l.arg<DevicePtr>(4);
  p.rows = l.arg<long long>(5);
  p.cols = l.arg<long long>(6);
  p.x_stride = l.arg<long long>(7);
  p.y_stride = l.arg<long long>(8);
  p.r_stride = l.arg<long long>(9);
  p.ro_stride = l.arg<long long>(10);
  p.eps = l.arg<float>(11);
  const rw::RmsNormStrides st = rw::kernelStrides(p);
  const DType t = p.dtype;
  const void* xh = l.backend->hostPtr(x);
  void* yh = l.backend->hostPtr(y);
  if (!xh || !yh) return Status::DeviceFault("sim rmsnorm: x or y is not a device allocation");
  const void* rh = p.has_residual ? l.backend->hostPtr(r) : nullptr;
  void* roh = p.has_residual ? l.backend->hostPtr(ro) : nullptr;
  if (p.has_residual && (!rh || !roh))
    return Status::DeviceFault("sim rmsnorm: the residual is not a device allocation");
  const void* wh = p.has_weight ? l.backend->hostPtr(w) : nullptr;
  if (p.has_weight && !wh) return Status::DeviceFault("sim rmsnorm: the weight is not a device allocation");
  if (p.rows <= 0 || p.cols <= 0) return Status::Ok();
  const size_t cols = size_t(p.cols), e = sizeOf(t), row_bytes = cols * e;
  Fingerprint f;
  for (int64_t v : {int64_t(1), int64_t(t), int64_t(p.has_weight), int64_t(p.has_residual), p.rows,
                    p.cols, st.x, st.r, int64_t(floatBits(p.eps))})
    f.add(v);
  f.add(xh, size_t((p.rows - 1) * st.x) * e + row_bytes);
  if (p.has_weight) f.add(wh, row_bytes);
  if (p.has_residual) f.add(rh, size_t((p.rows - 1) * st.r) * e + row_bytes);
  thread_local RowMemo memo;
  auto* yb = static_cast<unsigned char*>(yh);
  auto* rob = static_cast<unsigned char*>(roh);
  const int64_t ys_b = st.y * int64_t(e), ros_b = st.ro * int64_t(e), dense = int64_t(row_bytes);
  if (memo.valid && memo.fp == f.value()) {
    copyRows(yb, ys_b, memo.out[0].data(), dense, p.rows, row_bytes);
    if (p.has_residual) copyRows(rob, ros_b, memo.out[1].data(), dense, p.rows, row_bytes);
    return Status::Ok();
  }
  thread_local std::vector<double> xs, ws, rs, ys, ros;
  xs.resize(cols), rs.resize(cols), ys.resize(cols), ros.resize(cols), ws.resize(cols);
  if (p.has_weight) loadRow(wh, t, 0, cols, ws.data());
  rw::RmsNormProblem row = p;  // one row, contiguous in the buffers above
  row.rows = 1;
  row.x_stride = row.y_stride = row.r_stride = row.ro_stride = 0;
  for (int64_t i = 0; i < p.rows; ++i) {
    loadRow(xh, t, i * st.x, cols, xs.data());
    if (p.has_residual) loadRow(rh, t, i * st.r, cols, rs.data());
    rw::rmsNormReference(row, xs.data(), ws.data(), rs.data(), ys.data(), ros.data());
    storeRow(yh, t, i * st.y, cols, ys.data());
    if (p.has_residual) storeRow(roh, t, i * st.ro, cols, ros.data());
  }
  memo.fp = f.value();
  memo.valid = true;
  memo.out[0].resize(size_t(p.rows) * row_bytes);
  copyRows(memo.out[0].data(), dense, yb, ys_b, p.rows, row_bytes);
  memo.out[1].resize(p.has_residual ? size_t(p.rows) * row_bytes : 0);
  if (p.has_residual) copyRows(memo.out[1].data(), dense, rob, ros_b, p.rows, row_bytes);
  return Status::Ok();
}

Status simSiluMul(const SimLaunch& l) {
  rw::SiluMulProblem p;
  p.dtype = static_cast<rw::RowDType>(l.define("DTYPE"));
  const auto out = l.arg<DevicePtr>(0), x = l.arg<DevicePtr>(1);
  p.rows = l.arg<long long>(2);
  p.d = l.arg<long long>(3);
  p.x_stride = l.arg<long long>(4);
  p.out_stride = l.arg<long long>(5);
  const rw::SiluMulStrides st = rw::kernelStrides(p);
  const DType t = p.dtype;
  const void* xh = l.backend->hostPtr(x);
  void* oh = l.backend->hostPtr(out);
  if (!xh || !oh) return Status::DeviceFault("sim silu_mul: x or out is not a device allocation");
  if (p.rows <= 0 || p.d <= 0) return Status::Ok();
  const size_t d = size_t(p.d), e = sizeOf(t), row_bytes = d * e;
  Fingerprint f;
  for (int64_t v : {int64_t(2), int64_t(t), p.rows, p.d, st.x}) f.add(v);
  f.add(xh, size_t((p.rows - 1) * st.x) * e + 2 * row_bytes);
  thread_local RowMemo memo;
  auto* ob = static_cast<unsigned char*>(oh);
  const int64_t os_b = st.out * int64_t(e), dense = int64_t(row_bytes);
  if (memo.valid && memo.fp == f.value()) {
    copyRows(ob, os_b, memo.out[0].data(), dense, p.rows, row_bytes);
    return Status::Ok();
  }
  thread_local std::vector<double> xs, os;
  xs.resize(2 * d), os.resize(d);
  rw::SiluMulProblem row = p;
  row.rows = 1;
  row.x_stride = row.out_stride = 0;
  for (int64_t i = 0; i < p.rows; ++i) {
    loadRow(xh, t, i * st.x, 2 * d, xs.data());
    rw::siluMulReference(row, xs.data(), os.data());
    storeRow(oh, t, i * st.out, d, os.data());
  }
  memo.fp = f.value();
  memo.valid = true;
  memo.out[0].resize(size_t(p.rows) * row_bytes);
  copyRows(memo.out[0].data(), dense, ob, os_b, p.rows, row_bytes);
  return Status::Ok();
}

Status simGemm(const SimLaunch& l) { return hostGemm(l); }

SimGpu openSimGpu(int devices) {
  SimOptions so;
  so.device = simDevice();
  so.device_count = devices;
  so.memory_bytes_per_ms = kBytesPerMs;  // device copies, for the "% of copy bandwidth" column
  auto sim = std::make_shared<SimBackend>(so);
  SimKernel rk;
  rk.run = simRmsNorm;
  rk.cost = [](const SimLaunch& l) {
    const int64_t elems = l.arg<long long>(5) * l.arg<long long>(6);
    return rowwiseCost(l, 2.0 + (l.define("HAS_RESIDUAL") ? 2.0 : 0.0), elems);
  };
  sim->registerKernel(rw::kRmsNormEntry, rk);
  SimKernel sk;
  sk.run = simSiluMul;
  sk.cost = [](const SimLaunch& l) { return rowwiseCost(l, 3.0, l.arg<long long>(2) * l.arg<long long>(3)); };
  sim->registerKernel(rw::kSiluMulEntry, sk);
  // The same-run peers (bench/fair/peers.h) at the device's bandwidth: the flush reads, the copy
  // moves 2 x n bytes, the read-2/write-1 stream 3 x 16 x n.
  SimKernel fk;
  fk.cost = [](const SimLaunch& l) { return kLaunchMs + 16.0 * double(l.arg<long long>(1)) / kBytesPerMs; };
  sim->registerKernel(StreamPeers::kFlushEntry, fk);
  SimKernel ck;
  ck.cost = [](const SimLaunch& l) { return kLaunchMs + 2.0 * double(l.arg<long long>(2)) / kBytesPerMs; };
  sim->registerKernel(rw::kCopyEntry, ck);
  SimKernel r2;
  r2.cost = [](const SimLaunch& l) { return kLaunchMs + 48.0 * double(l.arg<long long>(3)) / kBytesPerMs; };
  sim->registerKernel(StreamPeers::kRead2Write1Entry, r2);
  SimKernel gk;
  gk.run = hostGemm;
  gk.cost = gemmCost;
  for (auto k : {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny, gemm::KernelKind::kWgmma,
                 gemm::KernelKind::kTma, gemm::KernelKind::kMfma, gemm::KernelKind::kDecode})
    sim->registerKernel(gemm::entryName(k), gk);
  SimGpu out;
  out.backend = sim;
  out.compiler = std::make_shared<SimCompiler>([](const CompileRequest&) {
    SimCompileDecision d;
    d.resources.registers = 64;
    return d;
  });
  return out;
}

}  // namespace ktune::cli
