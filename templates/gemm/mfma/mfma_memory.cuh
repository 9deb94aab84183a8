// The MFMA GEMM's data path (part of mfma.cuh, inside its KTUNE_AMD block): 16-byte buffer loads
// with range checks, swizzled 16-byte LDS writes, MFMA operand fragments, and the per-operand
// tile loader.
namespace km {

typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x2 __attribute__((ext_vector_type(2)));
typedef ktune::Vec<unsigned, 4> chunk_t;  // 8 x 16-bit

// The buffer intrinsics, declared through their LLVM names (works with hiprtc's clang and 19).
__device__ i32x4 raw_buffer_load_x4(i32x4 rsrc, int voffset, int soffset, int aux) __asm(
    "llvm.amdgcn.raw.buffer.load.v4i32");

// A buffer resource over [base, base + bytes): loads past `bytes` return 0. Word 3 is the gfx9
// data format word (32-bit untyped), as CDNA's buffer instructions expect.
KTUNE_DEVICE i32x4 make_rsrc(const void* base, unsigned long long bytes) {
  const unsigned long long p = reinterpret_cast<unsigned long long>(base);
  // readfirstlane: the resource must live in SGPRs; a VGPR resource makes LLVM wrap every
  // buffer load in a waterfall loop.
  i32x4 r;
  r[0] = __builtin_amdgcn_readfirstlane(static_cast<int>(p));
  r[1] = __builtin_amdgcn_readfirstlane(static_cast<int>((p >> 32) & 0xffff));  // stride 0
  r[2] = __builtin_amdgcn_readfirstlane(
      static_cast<int>(bytes > 0xffffffffull ? 0xffffffffull : bytes));
  r[3] = 0x00020000;
  return r;
}
constexpr int kOutOfRange = 0x7ffffff0;  // a byte offset past any resource

KTUNE_DEVICE chunk_t load16(i32x4 rsrc, int byte_offset) {
  const i32x4 v = raw_buffer_load_x4(rsrc, byte_offset, 0, 0);
  chunk_t c;
  c[0] = static_cast<unsigned>(v[0]);
  c[1] = static_cast<unsigned>(v[1]);
  c[2] = static_cast<unsigned>(v[2]);
  c[3] = static_cast<unsigned>(v[3]);
  return c;
}
// Keeps the first `valid` 16-bit elements of a chunk (valid >= 8 keeps all).
KTUNE_DEVICE chunk_t mask16(chunk_t c, int valid) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const unsigned m = (2 * j < valid ? 0xffffu : 0u) | (2 * j + 1 < valid ? 0xffff0000u : 0u);
    c[j] &= m;
  }
  return c;
}
// LDS 16-byte write through a vector type: LLVM keeps it one ds_write_b128 (a struct store may
// be split into 64-bit halves).
KTUNE_DEVICE void lds_write16(unsigned short* p, const chunk_t& c) {
  i32x4 v;
  v[0] = static_cast<int>(c[0]);
  v[1] = static_cast<int>(c[1]);
  v[2] = static_cast<int>(c[2]);
  v[3] = static_cast<int>(c[3]);
  *reinterpret_cast<i32x4*>(p) = v;
}
KTUNE_DEVICE unsigned short elem(const chunk_t& c, int j) {
  return static_cast<unsigned short>(c[j >> 1] >> ((j & 1) * 16));
}

#if DTYPE_AB == 2
typedef ktune::bf16x4_t op_t;
#else
typedef ktune::half4_t op_t;
#endif
#if MATRIX_INSTR == 32
typedef ktune::floatx16_t acc_t;
constexpr int kAcc = 16;
#else
typedef ktune::floatx4_t acc_t;
constexpr int kAcc = 4;
#endif
KTUNE_DEVICE acc_t mfma(op_t a, op_t b, acc_t c) {
#if DTYPE_AB == 2 && MATRIX_INSTR == 32
  return ktune::mfma_32x32x8_bf16(a, b, c);
#elif DTYPE_AB == 2
  return ktune::mfma_16x16x16_bf16(a, b, c);
#elif MATRIX_INSTR == 32
  return ktune::mfma_32x32x8_f16(a, b, c);
#else
  return ktune::mfma_16x16x16_f16(a, b, c);
#endif
}
KTUNE_DEVICE op_t half_of(const chunk_t& c, int h) {
  op_t o;
  __builtin_memcpy(&o, &c.v[2 * h], sizeof(o));
  return o;
}



// One operand's tile loader. K-major operands (A of NN/NT, B of NT/TT) load chunk q = row q / C,
// chunk q % C; MN-major ones load 8x8 blocks (block q: k-chunk q % C, MN rows 8 * (q / C)..+8),
// one 16-byte load per k row of the block.
template <int kRows, int kLoads, bool kKMajor>
struct Operand {
  chunk_t r[kLoads];
  const unsigned short* base;  // the stored matrix
  long ld, elems;              // leading dimension; stored rows * ld
  int mn0, mn_total, k_total;

  // A resource per tile, starting at the tile's first element: offsets stay below
  // 256 * ld * 2 bytes (the host keeps ld < 2^22), whatever the matrix size.
  KTUNE_DEVICE i32x4 tileRsrc(int k0) const {
    const long first = kKMajor ? (long)mn0 * ld + k0 : (long)k0 * ld + mn0;
    return make_rsrc(base + first, static_cast<unsigned long long>(elems - first) * 2);
  }
  KTUNE_DEVICE void load(int k0, int tid) {
    const i32x4 rsrc = tileRsrc(k0);
    if constexpr (kKMajor) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int q = tid + i * kThreads, row = q / kChunks, kk = (q % kChunks) * 8;
        const bool in = mn0 + row < mn_total && k0 + kk < k_total;
        r[i] = load16(rsrc, in ? static_cast<int>((row * ld + kk) * 2) : kOutOfRange);
      }
    } else {
#pragma unroll
      for (int b = 0; b < kLoads / 8; ++b) {
        const int q = tid + b * kThreads, kk = (q % kChunks) * 8, col = (q / kChunks) * 8;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const bool in = k0 + kk + j < k_total && mn0 + col < mn_total;
          r[8 * b + j] =
              load16(rsrc, in ? static_cast<int>(((kk + j) * ld + col) * 2) : kOutOfRange);
        }
      }
    }
  }
  // After the MFMAs: an empty asm that "rewrites" the loaded registers, so the repacking of the
  // transposed path (and the tail masks) cannot be hoisted above the MFMAs, where it would make
  // the wave wait for its loads first.
  KTUNE_DEVICE void holdUntilHere() {
#pragma unroll
    for (int i = 0; i < kLoads; ++i)
#pragma unroll
      for (int h = 0; h < 4; ++h) asm volatile("" : "+v"(r[i][h]));
  }
  // Masking the K (or M/N) tail happens here, not at the load: touching the loaded registers
  // right away would make the wave wait for the loads before its MFMAs.
  KTUNE_DEVICE void store(unsigned short* lds, int tid, int k0) const {
    if constexpr (kKMajor) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int q = tid + i * kThreads;
        lds_write16(lds + 8 * ldsChunk(q / kChunks, q % kChunks, kChunks),
                    mask16(r[i], k_total - k0 - (q % kChunks) * 8));
      }
    } else {
#pragma unroll
      for (int b = 0; b < kLoads / 8; ++b) {
        const int q = tid + b * kThreads, kc = q % kChunks, row0 = (q / kChunks) * 8;
        const int valid = mn_total - mn0 - row0;  // columns past M/N read as zero
#pragma unroll
        for (int j = 0; j < 8; ++j) {  // row row0 + j: element j of the 8 loaded k rows
          chunk_t t;
#pragma unroll
          for (int h = 0; h < 4; ++h)
            t[h] = elem(r[8 * b + 2 * h], j) | (static_cast<unsigned>(elem(r[8 * b + 2 * h + 1], j)) << 16);
          lds_write16(lds + 8 * ldsChunk(row0 + j, kc, kChunks), j < valid ? t : chunk_t{});
        }
      }
    }
  }
};


}  // namespace km
