// The suite look-ahead (tools/tune_lookahead.h) on the simulated H100-like device: after the next
// keys' first waves it compiles the whole guided space the decode-rows rule leaves for the later
// keys of at most 16 rows (one pass serves every such key of one row count: their code objects do
// not depend on N or K), and it leaves a key whose own tuning run has started. Beside the first
// key's first wave it compiles the later keys' defaults that the first key does not share (the
// split default at 4096x28672x4096, whose last round is split, where 4096^3 takes its twin).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "autotune/autotuner.h"
#include "base/fs.h"
#include "ops/gemm.h"
#include "tools/sim_gpu.h"
#include "tools/tune_lookahead.h"

namespace ktune {
namespace {

using gemm::ElemType;
using gemm::Layout;

struct SimOp {
  std::string dir;
  std::unique_ptr<Engine> tuner;
  std::unique_ptr<GemmOp> op;
  SimOp() {
    char t[] = "/tmp/ktune-lookahead-XXXXXX";
    dir = ::mkdtemp(t);
    cli::SimGpu gpu = cli::openSimGpu();
    EngineOptions o;
    o.options.cache_dir = dir;
    o.compiler = gpu.compiler;
    auto e = Engine::create(gpu.backend, o);
    EXPECT_TRUE(e.ok()) << e.status().toString();
    if (!e.ok()) return;
    tuner = std::move(*e);
    auto g = GemmOp::create(*tuner);
    EXPECT_TRUE(g.ok()) << g.status().toString();
    if (g.ok()) op = std::move(*g);
  }
  ~SimOp() {
    op.reset();
    tuner.reset();
    (void)removeTree(dir);
  }
};

gemm::GemmShape nt(int64_t m, int64_t n, int64_t k) {
  return gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, m, n, k);
}

TEST(GemmLookaheadDeep, CompilesTheFewRowKeysWholeSpaceOnce) {
  SimOp s;
  ASSERT_NE(s.op, nullptr);
  const std::vector<gemm::GemmShape> shapes = {nt(4096, 4096, 4096), nt(16, 6144, 4096),
                                               nt(16, 4096, 4096)};
  cli::GemmLookahead la(*s.op, shapes);
  la.tuning(0);
  la.start(1);
  la.finish();
  // The first waves (15 or so at 16 rows) and the rest of the 51 configs the rule leaves there.
  EXPECT_GE(la.compiled(), 40u);
  for (size_t i : {1u, 2u}) {
    auto again = s.op->precompile(shapes[i], 0, cli::GemmLookahead::kDeepConfigs);
    ASSERT_TRUE(again.ok()) << again.status().toString();
    EXPECT_EQ(*again, 0u) << i;  // every one in the store already
  }
}

TEST(GemmLookaheadDeep, LeavesAKeyWhoseTuningStarted) {
  SimOp s;
  ASSERT_NE(s.op, nullptr);
  const std::vector<gemm::GemmShape> shapes = {nt(4096, 4096, 4096), nt(16, 6144, 4096)};
  cli::GemmLookahead la(*s.op, shapes);
  la.tuning(1);  // key 1's run has started: its first wave only
  la.start(1);
  la.finish();
  const size_t first = la.compiled();
  EXPECT_GT(first, 0u);
  auto rest = s.op->precompile(shapes[1], 0, cli::GemmLookahead::kDeepConfigs);
  ASSERT_TRUE(rest.ok()) << rest.status().toString();
  EXPECT_GT(*rest, 0u);
  EXPECT_GE(first + *rest, 40u);
}

TEST(GemmLookaheadDefaults, CompilesTheLaterKeysOwnDefaultsBesideTheFirstWave) {
  SimOp s;
  ASSERT_NE(s.op, nullptr);
  const std::vector<gemm::GemmShape> shapes = {nt(4096, 4096, 4096), nt(4096, 28672, 4096),
                                               nt(4096, 6144, 4096), nt(16, 6144, 4096),
                                               nt(16, 4096, 4096)};
  auto d0 = s.op->defaultConfig(shapes[0]), d1 = s.op->defaultConfig(shapes[1]);
  ASSERT_TRUE(d0.ok() && d1.ok());
  EXPECT_EQ(d0->getInt("SPLIT_K", 0), 1);  // the idle split tail's twin
  EXPECT_EQ(d1->getInt("SPLIT_K", 0), 2);  // a last round of 20 of 132 tiles: split
  EXPECT_FALSE(s.op->defaultConfig(nt(0, 4096, 4096)).ok());
  cli::GemmLookahead la(*s.op, shapes);
  // 4096x6144x4096 shares 4096^3's default, 16x4096x4096 the 16-row one of 16x6144x4096.
  EXPECT_EQ(la.distinctDefaults(), (std::vector<size_t>{1, 3}));
  la.startFirst();
  la.awaitFirstCompiled();
  la.finish();
  EXPECT_GE(la.compiled(), 2u);
  for (size_t i : {1u, 3u}) {
    auto again = s.op->precompile(shapes[i], 1, 1);
    ASSERT_TRUE(again.ok()) << again.status().toString();
    EXPECT_EQ(*again, 0u) << i;  // the default is in the store
  }
}

}  // namespace
}  // namespace ktune
