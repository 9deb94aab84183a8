// The MFMA GEMM's index math: which 16-byte LDS slot a (row, chunk) lives in, which k and which
// C element each lane's fragments and accumulators hold. Plain constexpr C++:
// tests/unit/amd_gemm_index_test.cc includes this file on the host and checks it against the
// documented MFMA register layouts (exact coverage, no bank conflicts); mfma.cuh includes it on
// the device.
// constexpr functions are host and device functions in HIP, so these serve both sides.
#define KTUNE_MFMA_HD inline

namespace kmi {

// 16-byte chunk slot of (row, chunk) in a tile of rows of `chunks` 16-byte chunks: the slots of
// each 128-byte line (8 chunks = all 32 banks) are permuted by XOR with a per-line key, so 8
// lanes writing 8 consecutive chunks, 8 lanes reading one chunk of 8 consecutive rows, and 8
// lanes writing one chunk of rows 8 apart (the transposed path) all hit 8 different bank groups.
KTUNE_MFMA_HD constexpr int ldsChunk(int row, int chunk, int chunks) {
  const int lin = row * chunks + chunk;
  const int per_line = chunks < 8 ? chunks : 8;
  const int key = (row * per_line / 8) & 7;
  return (lin & ~7) | ((lin & 7) ^ key);
}
// K elements one ds_read_b128 round covers: each lane reads 8 consecutive k of its row, and the
// 64 lanes hold 64/MI rows groups.
KTUNE_MFMA_HD constexpr int kPerRead(int mi) { return mi == 32 ? 16 : 32; }
// Operand fragment: lane reads row (lane % mi) of its operand tile, chunk (round * (64/mi) +
// lane / mi) of that row; its 8 elements feed MFMA `2*round` (first 4) and `2*round+1`.
KTUNE_MFMA_HD constexpr int fragRow(int lane, int mi) { return lane % mi; }
KTUNE_MFMA_HD constexpr int fragChunk(int lane, int mi, int round) {
  return round * (64 / mi) + lane / mi;
}
// Tile k of element e (0..3) of the 4-element operand of MFMA step `step` for this lane: the
// permutation described at the top (same for A and B).
KTUNE_MFMA_HD constexpr int fragK(int lane, int mi, int step, int e) {
  return fragChunk(lane, mi, step / 2) * 8 + (step % 2) * 4 + e;
}
// Accumulator element e of a lane (MFMA computes C^T): C row (m) and column (n) inside the
// mi x mi block. 32x32x8: D[i][j] is in lane j + 32 * ((i / 4) % 2), element (i / 8) * 4 + i % 4;
// 16x16x16: D[i][j] is in lane j + 16 * (i / 4), element i % 4 — with i = n, j = m here.
KTUNE_MFMA_HD constexpr int accM(int lane, int mi) { return lane % mi; }
KTUNE_MFMA_HD constexpr int accN(int lane, int mi, int e) {
  return mi == 32 ? 8 * (e / 4) + 4 * (lane / 32) + e % 4 : 4 * (lane / 16) + e;
}
// Waves arranged wavesM x wavesN over the block tile.
KTUNE_MFMA_HD constexpr int wavesM(int waves, int bm, int bn) {
  return waves == 8 && bm >= bn ? 4 : 2;
}

}  // namespace kmi
