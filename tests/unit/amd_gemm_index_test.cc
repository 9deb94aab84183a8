// The MFMA GEMM's index math (templates/gemm/mfma/mfma_index.cuh, namespace kmi) checked on the host:
// the LDS swizzle is a bijection and free of bank conflicts for the kernel's three access patterns
// (16-byte writes of K-major chunks, 16-byte writes of the register-transposed blocks, 16-byte
// operand reads), and the tile product computed through the kernel's own LDS placement, operand
// fragments and accumulator mapping, with MFMA emulated from the documented register layouts of
// v_mfma_f32_32x32x8 and v_mfma_f32_16x16x16, equals A * B^T exactly, each C element written once.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "templates/gemm/mfma/mfma_index.cuh"

namespace {

using namespace kmi;

// LDS bank model for 16-byte accesses: a wave's 64 lanes go in 8 phases of 8 lanes, and a phase
// is conflict-free when its lanes touch 8 different 16-byte bank groups (32 banks x 4 bytes =
// 128 bytes per cycle) or the very same address (broadcast).
int conflicts(const std::vector<int>& chunk_of_lane) {
  int worst = 0;
  for (size_t p = 0; p + 8 <= chunk_of_lane.size(); p += 8) {
    std::set<int> groups, addrs;
    for (size_t l = p; l < p + 8; ++l) {
      if (addrs.insert(chunk_of_lane[l]).second) groups.insert(chunk_of_lane[l] & 7);
    }
    worst = std::max(worst, static_cast<int>(addrs.size() - groups.size()));
  }
  return worst;
}

TEST(MfmaIndex, SwizzleIsABijectionAndConflictFree) {
  for (int chunks : {2, 4, 8, 16}) {
    for (int rows : {32, 64, 128, 256}) {
      SCOPED_TRACE(testing::Message() << rows << " rows of " << chunks << " chunks");
      std::set<int> seen;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < chunks; ++c) {
          const int p = ldsChunk(r, c, chunks);
          ASSERT_GE(p, 0);
          ASSERT_LT(p, rows * chunks);
          ASSERT_TRUE(seen.insert(p).second) << "slot " << p << " used twice";
        }
      // Writes of K-major chunks: lane q writes row q / chunks, chunk q % chunks.
      for (int w = 0; w * 64 < rows * chunks; ++w) {
        std::vector<int> lanes;
        for (int l = 0; l < 64 && w * 64 + l < rows * chunks; ++l) {
          const int q = w * 64 + l;
          lanes.push_back(ldsChunk(q / chunks, q % chunks, chunks));
        }
        EXPECT_EQ(conflicts(lanes), 0) << "K-major write, wave " << w;
      }
      // Writes of transposed 8x8 blocks: lane q, step j writes row 8 * (q / chunks) + j.
      const int blocks = rows * chunks / 8;
      for (int j = 0; j < 8; ++j)
        for (int w = 0; w * 64 < blocks; ++w) {
          std::vector<int> lanes;
          for (int l = 0; l < 64 && w * 64 + l < blocks; ++l) {
            const int q = w * 64 + l;
            lanes.push_back(ldsChunk(8 * (q / chunks) + j, q % chunks, chunks));
          }
          EXPECT_EQ(conflicts(lanes), 0) << "transposed write, step " << j;
        }
      // Operand reads: lane reads row base + fragRow, chunk fragChunk of its round.
      for (int mi : {16, 32}) {
        if (chunks * 8 % kPerRead(mi) != 0) continue;
        for (int base = 0; base + mi <= rows; base += mi)
          for (int round = 0; round < chunks * 8 / kPerRead(mi); ++round) {
            std::vector<int> lanes;
            for (int l = 0; l < 64; ++l)
              lanes.push_back(ldsChunk(base + fragRow(l, mi), fragChunk(l, mi, round), chunks));
            EXPECT_EQ(conflicts(lanes), 0) << "read, MI " << mi << " round " << round;
          }
      }
    }
  }
}

// One MFMA from the documented layouts. ia/ib: per lane, 4 elements of the instruction's A and B
// operands; acc: per lane, mi*mi/64 accumulators.
void emulateMfma(int mi, const std::vector<std::array<int64_t, 4>>& ia,
                 const std::vector<std::array<int64_t, 4>>& ib, std::vector<std::vector<int64_t>>& acc) {
  const int kdim = mi == 32 ? 8 : 16, groups = 64 / mi;
  std::vector<int64_t> A(mi * kdim), B(kdim * mi);
  for (int l = 0; l < 64; ++l)
    for (int e = 0; e < 4; ++e) {
      const int k = 4 * (l / mi) + e;  // lanes l and l + mi*g hold k-block g
      ASSERT_LT(k, kdim);
      A[(l % mi) * kdim + k] = ia[l][e];
      B[k * mi + l % mi] = ib[l][e];
    }
  (void)groups;
  for (int i = 0; i < mi; ++i)
    for (int j = 0; j < mi; ++j) {
      int64_t d = 0;
      for (int k = 0; k < kdim; ++k) d += A[i * kdim + k] * B[k * mi + j];
      // D[i][j]: 32x32 -> lane j + 32 * ((i / 4) % 2), element (i / 8) * 4 + i % 4;
      //          16x16 -> lane j + 16 * (i / 4), element i % 4.
      const int lane = mi == 32 ? j + 32 * ((i / 4) % 2) : j + 16 * (i / 4);
      const int elem = mi == 32 ? (i / 8) * 4 + i % 4 : i % 4;
      acc[lane][elem] += d;
    }
}

struct Geometry {
  int bm, bn, bk, mi, waves;
};

void checkProduct(const Geometry& g) {
  SCOPED_TRACE(testing::Message() << g.bm << "x" << g.bn << "x" << g.bk << " MI " << g.mi
                                  << " waves " << g.waves);
  const int chunks = g.bk / 8, wm_count = wavesM(g.waves, g.bm, g.bn), wn_count = g.waves / wm_count;
  const int wm_tile = g.bm / wm_count, wn_tile = g.bn / wn_count;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(-8, 8);
  std::vector<int64_t> a(g.bm * g.bk), b(g.bn * g.bk);  // K rows: a[m][k], b[n][k]
  for (auto& x : a) x = val(rng);
  for (auto& x : b) x = val(rng);
  // LDS as the kernel lays it out.
  auto place = [&](const std::vector<int64_t>& t, int rows) {
    std::vector<int64_t> lds(rows * g.bk);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < chunks; ++c)
        for (int e = 0; e < 8; ++e) lds[8 * ldsChunk(r, c, chunks) + e] = t[r * g.bk + 8 * c + e];
    return lds;
  };
  const auto la = place(a, g.bm), lb = place(b, g.bn);
  std::vector<int> written(g.bm * g.bn, 0);
  const int tm_n = wm_tile / g.mi, tn_n = wn_tile / g.mi, steps = 2 * (g.bk / kPerRead(g.mi));
  for (int wave = 0; wave < g.waves; ++wave) {
    const int wm = wave / wn_count, wn = wave % wn_count;
    for (int tm = 0; tm < tm_n; ++tm)
      for (int tn = 0; tn < tn_n; ++tn) {
        std::vector<std::vector<int64_t>> acc(64, std::vector<int64_t>(g.mi * g.mi / 64, 0));
        for (int step = 0; step < steps; ++step) {
          std::vector<std::array<int64_t, 4>> ia(64), ib(64);
          for (int l = 0; l < 64; ++l) {
            const int c = fragChunk(l, g.mi, step / 2);
            const int ra = wm * wm_tile + tm * g.mi + fragRow(l, g.mi);
            const int rb = wn * wn_tile + tn * g.mi + fragRow(l, g.mi);
            for (int e = 0; e < 4; ++e) {
              const int off = (step % 2) * 4 + e;
              ib[l][e] = la[8 * ldsChunk(ra, c, chunks) + off];  // A fragment: instruction's B
              ia[l][e] = lb[8 * ldsChunk(rb, c, chunks) + off];  // B fragment: instruction's A
              ASSERT_EQ(ib[l][e], a[ra * g.bk + fragK(l, g.mi, step, e)]);
            }
          }
          emulateMfma(g.mi, ia, ib, acc);
        }
        for (int l = 0; l < 64; ++l)
          for (int e = 0; e < g.mi * g.mi / 64; ++e) {
            const int m = wm * wm_tile + tm * g.mi + accM(l, g.mi);
            const int n = wn * wn_tile + tn * g.mi + accN(l, g.mi, e);
            ASSERT_LT(m, g.bm);
            ASSERT_LT(n, g.bn);
            ++written[m * g.bn + n];
            int64_t want = 0;
            for (int k = 0; k < g.bk; ++k) want += a[m * g.bk + k] * b[n * g.bk + k];
            ASSERT_EQ(acc[l][e], want) << "C[" << m << "][" << n << "]";
          }
      }
  }
  for (int i = 0; i < g.bm * g.bn; ++i) ASSERT_EQ(written[i], 1) << "C element " << i;
}

TEST(MfmaIndex, TileProductMatchesTheDocumentedMfmaLayouts) {
  for (const Geometry& g : {Geometry{32, 32, 32, 16, 4}, Geometry{64, 64, 32, 32, 4},
                            Geometry{64, 128, 64, 16, 4}, Geometry{128, 64, 64, 32, 8},
                            Geometry{128, 128, 32, 16, 8}, Geometry{256, 64, 16, 32, 4}})
    checkProduct(g);
}

TEST(MfmaIndex, AccumulatorsHoldFourConsecutiveN) {
  // The vectorised epilogue stores accumulators 4g..4g+3 as 4 consecutive C columns.
  for (int mi : {16, 32})
    for (int l = 0; l < 64; ++l)
      for (int g = 0; g < mi * mi / 64 / 4; ++g) {
        EXPECT_EQ(accN(l, mi, 4 * g) % 4, 0);
        for (int e = 1; e < 4; ++e) EXPECT_EQ(accN(l, mi, 4 * g + e), accN(l, mi, 4 * g) + e);
      }
}

}  // namespace
