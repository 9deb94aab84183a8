// CI (no GPU): ktune's AMD occupancy equals LLVM's own "; Occupancy:" and the MI300X guide's
// formula for 100% of the MFMA GEMM space on gfx90a and gfx942, in seconds instead of the hour
// that compiling all ~8700 configs twice would take on two cores.
//
// Occupancy is a function of what the kernel descriptor reports (.vgpr_count with the AGPRs,
// .sgpr_count, LDS) and of the launch (waves per workgroup, and the kernel's launch bound and
// waves_per_eu hint that LLVM reads). Of these, the config alone fixes the launch, the launch
// bound, the hint and the LDS (the MFMA kernel's LDS is static and equal to gemm::sharedBytes, as
// amd_spaces_test checks on the configs it compiles); only the register counts need a compile.
// So every config's (waves, LDS, hint) is collected from the space, and for each distinct one
// llc-19 compiles tiny kernels that declare exactly that LDS, launch bound and hint and clobber
// every register count a compile could give (both ends of every 8-register granule up to the
// file size, with and without AGPRs, low and high SGPR counts). ktune's analysis of each kernel's
// descriptor must give LLVM's figure for that kernel: then it gives it for every config, whatever
// registers the config's real compile uses. amd_spaces_test ties the real compiles to this: the
// descriptor's .vgpr_count equals LLVM's TotalNumVgprs and the occupancy equals LLVM's on the
// configs it compiles.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/analysis/amd_metadata.h"
#include "compiler/analysis/report.h"
#include "templates/gemm.h"
#include "tests/support/tools.h"
#include "tests/unit/amd_occupancy_check.h"

namespace ktune {
namespace {

// What a config fixes about occupancy: waves per workgroup, LDS bytes, the waves_per_eu hint.
using LaunchFacts = std::tuple<int, int64_t, int>;

std::map<LaunchFacts, int> factsOfEveryMfmaConfig(size_t* configs) {
  using namespace gemm;
  const auto all = configSpace(KernelKind::kMfma).enumerate("hip", 64 * 1024).accepted;
  *configs = all.size();
  DeviceInfo dev;
  dev.vendor = Vendor::kAmd;
  dev.arch = "gfx942";
  const auto s = denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096);
  std::map<LaunchFacts, int> facts;
  for (const Config& c : all) {
    auto plan = launchPlan(KernelKind::kMfma, c, s, dev);
    if (!plan.ok()) {
      ADD_FAILURE() << c.toString() << ": " << plan.status().toString();
      continue;
    }
    ++facts[{int(plan->block.x / 64), sharedBytes(KernelKind::kMfma, c), int(c.getInt("WAVES_PER_EU"))}];
  }
  return facts;
}

// "~{v[0:31]},~{v[32:63]},...": clobbers of registers 0..n-1 of one kind (at most 32 per tuple).
std::string clobbers(char kind, int n) {
  std::string out;
  for (int i = 0; i < n; i += 32) {
    const int last = std::min(n, i + 32) - 1;
    out += std::string(out.empty() ? "" : ",") + "~{" + kind +
           (last == i ? std::to_string(i) : "[" + std::to_string(i) + ":" + std::to_string(last) + "]") + "}";
  }
  return out;
}

// Register counts (AGPRs included) up to max_total to probe: both sides of every step of the
// VGPR-limited occupancy (floor(512 / count rounded to 8) changes at 64, 72, 80, 96, 128, 168 and
// 256), the smallest and the largest; with `all`, both ends of every 8-register granule (the
// rounding itself), which one fact per workgroup size gets.
std::vector<int> registerCounts(int max_total, bool all) {
  std::set<int> out = {1, max_total};
  for (int step : {64, 72, 80, 96, 128, 168, 256})
    for (int t : {step, step + 1}) out.insert(t);
  if (all)
    for (int g = 1; g * 8 <= max_total; ++g) out.insert({8 * g - 7, 8 * g});
  std::vector<int> v;
  for (int t : out)
    if (t <= max_total) v.push_back(t);
  return v;
}

struct Probe {
  std::string name;
  LaunchFacts facts;
};

// One LLVM IR module: for every launch fact, kernels that use exactly that LDS, launch bound and
// hint, and clobber each register count a compile could give within the bound.
std::string probeModule(const std::map<LaunchFacts, int>& facts, std::vector<Probe>* probes) {
  std::string ir = "target triple = \"amdgcn-amd-amdhsa\"\n";
  int id = 0;
  std::set<int> sweep;  // waves per workgroup whose first fact got the full register sweep
  for (const auto& [f, n] : facts) {
    const auto [waves, lds, hint] = f;
    // The most VGPRs (AGPRs included) one lane may hold with this launch bound and hint.
    const int max_total = std::min(512 / ((waves + 3) / 4), hint > 0 ? 512 / hint / 8 * 8 : 512);
    const std::string attrs = "\"amdgpu-flat-work-group-size\"=\"1," + std::to_string(64 * waves) + "\"" +
                              (hint > 0 ? " \"amdgpu-waves-per-eu\"=\"" + std::to_string(hint) + "\"" : "");
    for (int total : registerCounts(max_total, sweep.insert(waves).second))
        for (int sgprs : {0, 90}) {
          const int g = (total + 7) / 8;
          // Odd granules without AGPRs (when they fit the 256 architectural VGPRs), even ones with.
          int v = total, a = 0;
          if ((g % 2 == 0 || total > 256) && total > 32) {
            a = std::min(256, total - 32);
            v = total - a;
          }
          const std::string name = "probe_" + std::to_string(id);
          const std::string gv = "@lds_" + std::to_string(id);
          if (lds > 0) ir += gv + " = internal addrspace(3) global [" + std::to_string(lds) + " x i8] undef, align 16\n";
          ir += "define amdgpu_kernel void @" + name + "() #" + std::to_string(id) + " {\n";
          ir += "  call void asm sideeffect \"\", \"" + clobbers('v', v) + "\"()\n";
          if (a > 0) ir += "  call void asm sideeffect \"\", \"" + clobbers('a', a) + "\"()\n";
          if (sgprs > 0) ir += "  call void asm sideeffect \"\", \"" + clobbers('s', sgprs) + "\"()\n";
          if (lds > 0) ir += "  store volatile i8 0, ptr addrspace(3) " + gv + "\n";
          ir += "  ret void\n}\nattributes #" + std::to_string(id) + " = { " + attrs + " }\n";
          probes->push_back({name, f});
          ++id;
        }
  }
  return ir;
}

// The assembly of each kernel (from its .globl to the next), for LLVM's per-kernel comments.
std::map<std::string, std::string> splitByKernel(const std::string& s) {
  std::map<std::string, std::string> out;
  size_t p = s.find("\t.globl\t");
  while (p != std::string::npos) {
    const size_t name_end = s.find_first_of(" \t\n", p + 8);  // "\t.globl\tname   ; -- Begin..."
    const std::string name = s.substr(p + 8, name_end - p - 8);
    const size_t next = s.find("\t.globl\t", name_end);
    out[name] = s.substr(p, (next == std::string::npos ? s.size() : next) - p);
    p = next;
  }
  return out;
}

void checkArch(const std::string& arch) {
  std::string llc = findProgram("llc-19");
  if (llc.empty()) llc = findProgram("llc");
  if (llc.empty()) KTUNE_SKIP_WITHOUT_TOOL("no llc-19 (llvm-19)");
  const auto t0 = std::chrono::steady_clock::now();
  size_t configs = 0;
  const auto facts = factsOfEveryMfmaConfig(&configs);
  ASSERT_GT(configs, 1000u);
  std::vector<Probe> probes;
  const std::string ir = probeModule(facts, &probes);
  std::printf("%s: %zu MFMA configs -> %zu distinct (waves, LDS, waves_per_eu) -> %zu probe kernels\n",
              arch.c_str(), configs, facts.size(), probes.size());
  std::fflush(stdout);
  char tmpl[] = "/tmp/ktune-occ-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ASSERT_TRUE(writeFileAtomic(dir + "/probes.ll", ir).ok());
  // -O0: the probes have no code to optimise (their register counts are the clobbers), and it is
  // about 100x faster than -O3 here with the same counts and occupancy.
  auto r = runProcess({llc, "-O0", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=" + arch, dir + "/probes.ll",
                       "-o", dir + "/probes.s"}, "", 600000);
  ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->err.substr(0, 3000) : r.status().toString());
  auto text = readFile(dir + "/probes.s", 1ull << 30);
  (void)removeTree(dir);
  ASSERT_TRUE(text.ok());
  const auto metas = parseAmdgpuMetadataYaml(*text);
  const auto chunks = splitByKernel(*text);
  ASSERT_EQ(metas.size(), probes.size());
  std::map<std::string, LaunchFacts> facts_of;
  for (const auto& p : probes) facts_of[p.name] = p.facts;
  int checked = 0, agpr_probes = 0, failures = 0;
  for (const auto& m : metas) {
    const auto [waves, lds, hint] = facts_of.at(m.name);
    CodeObject co;
    co.arch = arch;
    co.compiler = "clang";
    co.lowered_entry = m.name;
    co.resources = amdResources(m);
    const KernelReport rep = analyzeCodeObject(co, 64 * waves, 0);
    const LlvmKernelInfo info = parseLlvmKernelInfo(chunks.at(m.name), m.name);
    const auto& u = co.resources;
    std::string why;
    if (!info.found()) why += " no '; Occupancy:';";
    else if (!rep.has_occupancy) why += " ktune has no occupancy: " + rep.occupancy_note + ";";
    else {
      if (rep.amd.llvm_waves_per_eu != info.occupancy)
        why += " ktune " + std::to_string(rep.amd.llvm_waves_per_eu) + " != LLVM " + std::to_string(info.occupancy) + ";";
      if (rep.amd.waves_per_eu != testsupport::guideWavesPerEu(u.vgpr, u.sgpr, u.shared_bytes, waves))
        why += " ktune's guide figure " + std::to_string(rep.amd.waves_per_eu) + " != the guide's;";
      if (info.total_vgprs != u.vgpr) why += " .vgpr_count != TotalNumVgprs;";
    }
    if (u.shared_bytes != lds) why += " LDS " + std::to_string(u.shared_bytes) + " != " + std::to_string(lds) + ";";
    if (!why.empty() && ++failures <= 20)
      ADD_FAILURE() << arch << " " << m.name << " (waves " << waves << ", LDS " << lds << ", hint " << hint
                    << ", .vgpr_count " << u.vgpr << ", AGPR " << u.agpr << ", .sgpr_count " << u.sgpr
                    << "):" << why;
    ++checked;
    agpr_probes += u.agpr > 0;
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(agpr_probes, checked / 3) << "too few probes with AGPRs";
  std::printf("%s: %zu MFMA configs -> %zu distinct (waves, LDS, waves_per_eu); %d probe kernels "
              "(%d with AGPRs) agree with LLVM's '; Occupancy:' and the guide in %.1f s\n",
              arch.c_str(), configs, facts.size(), checked, agpr_probes,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST(AmdOccupancyLlvm, EveryMfmaConfigForGfx942) { checkArch("gfx942"); }
TEST(AmdOccupancyLlvm, EveryMfmaConfigForGfx90a) { checkArch("gfx90a"); }

}  // namespace
}  // namespace ktune
