#include "templates/catalog.h"

#include <cstdlib>

#include "templates/embedded.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"

namespace ktune::templates {

const std::vector<TemplateInfo>& catalog() {
  static const std::vector<TemplateInfo> kCatalog = {
      {"rmsnorm", rowwise::kRmsNormSource, rowwise::kRmsNormEntry,
       "RMSNorm y = x * rsqrt(mean(x^2) + eps) * w, optional fused residual add",
       "bf16, 4096 x 4096, with weight"},
      {"silu_mul", rowwise::kSiluMulSource, rowwise::kSiluMulEntry,
       "out = silu(x[:, :d]) * x[:, d:]", "bf16, 4096 rows, d = 14336"},
      {"copy", rowwise::kCopySource, rowwise::kCopyEntry,
       "16-byte vectorized device copy (the bandwidth peer)", "any size"},
      {"gemm_mma", gemm::sourceFile(gemm::KernelKind::kMma), gemm::entryName(gemm::KernelKind::kMma),
       "NVIDIA mma.sync m16n8k16 GEMM with a cp.async multistage pipeline (sm_80+)",
       "bf16 NN 4096^3"},
      {"gemm_skinny", gemm::sourceFile(gemm::KernelKind::kSkinny),
       gemm::entryName(gemm::KernelKind::kSkinny),
       "weight-streaming GEMM for M <= 64 (decode shapes), NVIDIA", "bf16 NT M=16, N=K=4096"},
      {"gemm_decode", gemm::sourceFile(gemm::KernelKind::kDecode),
       gemm::entryName(gemm::KernelKind::kDecode),
       "stream-K weight-streaming GEMM for M <= 128 (decode shapes), NVIDIA",
       "bf16 NT M=1, N=K=4096"},
      {"gemm_mfma", gemm::sourceFile(gemm::KernelKind::kMfma), gemm::entryName(gemm::KernelKind::kMfma),
       "AMD MFMA GEMM (16x16 or 32x32 instructions, waves_per_eu, LDS stages)",
       "bf16 NT 4096^3, B stored [N][K] as LLM weights"},
      {"gemm_wgmma", gemm::sourceFile(gemm::KernelKind::kWgmma),
       gemm::entryName(gemm::KernelKind::kWgmma),
       "Hopper wgmma GEMM fed by a cp.async pipeline, split-K capable (sm_90a)", "bf16 NT 4096^3"},
      {"gemm_tma", gemm::sourceFile(gemm::KernelKind::kTma), gemm::entryName(gemm::KernelKind::kTma),
       "Hopper GEMM: TMA loads on mbarriers, producer/consumer warpgroups, persistent grid, "
       "TMA-store epilogue (sm_90a)",
       "bf16 NT 4096^3"},
  };
  return kCatalog;
}

Expected<TemplateInfo> findTemplate(const std::string& name) {
  std::string known;
  for (const auto& t : catalog()) {
    if (t.name == name) {
      if (embeddedSource(t.source_file.c_str()).empty())
        return Status::NotFound("template '" + name + "' is listed but its source " +
                                t.source_file + " was not built into this ktune");
      return t;
    }
    if (!embeddedSource(t.source_file.c_str()).empty()) known += (known.empty() ? "" : ", ") + t.name;
  }
  return Status::NotFound("unknown template '" + name + "' (known: " + known +
                          "; or pass a path to your own .cu/.cuh file with --entry NAME)");
}

namespace {

// A GEMM template's kernel and the example problem its defaults compile for.
struct GemmExample {
  gemm::KernelKind kind;
  gemm::GemmShape shape;
};

// kNotFound for a template that is not a GEMM; kUnsupported when its kernel is not for `arch`.
Expected<GemmExample> gemmExample(const TemplateInfo& t, const std::string& arch, bool amd) {
  using gemm::ElemType;
  using gemm::Layout;
  GemmExample g{gemm::KernelKind::kMma,
                gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 4096, 4096, 4096)};
  if (t.name == "gemm_mma") {
    g.shape.layout = Layout::kNN;
  } else if (t.name == "gemm_skinny") {
    g.kind = gemm::KernelKind::kSkinny;
    g.shape = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 16, 4096, 4096);
  } else if (t.name == "gemm_decode") {
    g.kind = gemm::KernelKind::kDecode;
    g.shape = gemm::denseShape(Layout::kNT, ElemType::kBF16, ElemType::kBF16, 1, 4096, 4096);
  } else if (t.name == "gemm_wgmma" || t.name == "gemm_tma") {
    if (arch != "sm_90a")
      return Status::Unsupported("template '" + t.name + "' needs arch sm_90a (wgmma), got " + arch);
    g.kind = t.name == "gemm_tma" ? gemm::KernelKind::kTma : gemm::KernelKind::kWgmma;
  } else if (t.name == "gemm_mfma") {
    // NT: with B stored [K][N] (NN) only tiles of 48 KiB LDS or more apply, one workgroup per CU.
    g.kind = gemm::KernelKind::kMfma;
  } else {
    return Status::NotFound("no defaults for template '" + t.name + "'");
  }
  if ((g.kind == gemm::KernelKind::kMfma) != amd)
    return Status::Unsupported("template '" + t.name + "' has no kernel for " + arch + " (use " +
                               (amd ? "gemm_mfma"
                                    : "gemm_mma, gemm_skinny, gemm_decode, gemm_wgmma or gemm_tma") +
                               ")");
  return g;
}

DeviceInfo nominalDevice(const std::string& arch, bool amd) {
  DeviceInfo dev;
  dev.arch = arch;
  dev.vendor = amd ? Vendor::kAmd : Vendor::kNvidia;
  return dev;
}

// The config the defines pin (the space's knobs given as integers) and the problem they pick
// (-D LAYOUT=0..3 overrides the example's layout). False when a knob's value is not an integer:
// then only the compiler can judge it.
bool pinnedConfig(const GemmExample& g, const DefineList& defines, Config* c, gemm::GemmShape* s) {
  *s = g.shape;
  for (const auto& [k, v] : defines) {
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    const bool integer = !v.empty() && *end == '\0';
    if (k == "LAYOUT" && integer && x >= 0 && x <= 3) {
      s->layout = static_cast<gemm::Layout>(x);
      continue;
    }
    for (const auto& spec : gemm::configSpace(g.kind).params()) {
      if (k != spec.name) continue;
      if (!integer) return false;
      c->set(k, static_cast<int64_t>(x));
    }
  }
  return true;
}

// The example shape, its rows changed to the first power of two that config `c` serves when it
// does not serve the example's: the kernel's source does not depend on the rows (gemm::defines),
// only whether a config serves them does, so a config of another row tier (the decode kind's
// DC_MT, DC_WG = 3's M <= 8) is checked, compiled and launched (its shared memory, its occupancy)
// at rows it serves. Unchanged when no M serves it (the check then names the example's reason).
gemm::GemmShape servedRows(gemm::KernelKind k, const Config& c, const gemm::GemmShape& s) {
  if (gemm::applicable(k, c, s).ok()) return s;
  for (int64_t m = 1; m <= 8192; m *= 2) {
    gemm::GemmShape r = gemm::denseShape(s.layout, s.ab, s.c, m, s.n, s.k);
    r.has_bias = s.has_bias;
    r.act = s.act;
    r.beta = s.beta;
    if (gemm::applicable(k, c, r).ok()) return r;
  }
  return s;
}

// LDS one workgroup may hold on an AMD arch (CDNA4 160 KiB, else 64 KiB); 0 on NVIDIA, where a
// config's shared memory is checked against the device's opt-in limit at launch.
int64_t sharedLimit(const std::string& arch, bool amd) {
  if (!amd) return 0;
  return arch.rfind("gfx950", 0) == 0 ? 160 * 1024 : 64 * 1024;
}

}  // namespace

Expected<DefineList> defaultDefines(const TemplateInfo& t, const std::string& arch) {
  KTUNE_ASSIGN_OR_RETURN(auto limits, rowwise::limitsForArch(arch));
  const bool amd = limits.backend == "hip";
  if (t.name == "rmsnorm") {
    rowwise::RmsNormProblem p;
    p.rows = 4096;
    p.cols = 4096;
    return rowwise::rmsNormDefines(rowwise::rmsNormDefaultConfig(p.dtype, limits), p);
  }
  if (t.name == "silu_mul") {
    rowwise::SiluMulProblem p;
    p.rows = 4096;
    p.d = 14336;
    return rowwise::siluMulDefines(rowwise::siluMulDefaultConfig(p.dtype, limits), p);
  }
  if (t.name == "copy") return rowwise::copyDefines(rowwise::copyDefaultConfig(limits));
  KTUNE_ASSIGN_OR_RETURN(GemmExample g, gemmExample(t, arch, amd));
  // The arch's curated default: what the tuned op runs for this arch with tuning off.
  KTUNE_ASSIGN_OR_RETURN(auto configs,
                         gemm::curatedConfigs(g.kind, g.shape, nominalDevice(arch, amd), ""));
  if (configs.empty()) return Status::Internal("no curated config for " + t.name);
  return gemm::defines(g.kind, configs.front(), g.shape);
}

Status checkDefines(const TemplateInfo& t, const std::string& arch, const DefineList& defines) {
  auto limits = rowwise::limitsForArch(arch);
  if (!limits.ok()) return Status::Ok();  // the compile names the arch problem
  auto g = gemmExample(t, arch, limits->backend == "hip");
  if (!g.ok()) return Status::Ok();  // no space to check against (or no kernel: said elsewhere)
  Config c;
  gemm::GemmShape s;
  if (!pinnedConfig(*g, defines, &c, &s)) return Status::Ok();
  const std::string hint = "; `ktune explain " + t.name + " --arch " + arch +
                           " --list-configs` lists the valid configs";
  Status v = gemm::configSpace(g->kind).validate(c);
  if (!v.ok()) return Status::InvalidArgument(t.name + ": " + v.message() + hint);
  const int64_t limit = sharedLimit(arch, limits->backend == "hip");
  if (limit > 0 && gemm::sharedBytes(g->kind, c) > limit)
    return Status::InvalidArgument(t.name + ": config " + c.toString() + " needs " +
                                   std::to_string(gemm::sharedBytes(g->kind, c)) +
                                   " B of LDS > the " + std::to_string(limit) + " of a " + arch +
                                   " workgroup" + hint);
  const Status a = gemm::applicable(g->kind, c, servedRows(g->kind, c, s));
  if (!a.ok())
    return Status::InvalidArgument(t.name + ": config " + c.toString() + " does not apply to " +
                                   "layout " + gemm::layoutName(s.layout) + ": " + a.message() +
                                   " (-D LAYOUT=0..3 picks NN, NT, TN or TT)" + hint);
  return Status::Ok();
}

Expected<std::vector<Config>> validConfigs(const TemplateInfo& t, const std::string& arch,
                                           const DefineList& defines) {
  KTUNE_ASSIGN_OR_RETURN(auto limits, rowwise::limitsForArch(arch));
  KTUNE_ASSIGN_OR_RETURN(GemmExample g, gemmExample(t, arch, limits.backend == "hip"));
  Config unused;
  gemm::GemmShape s;
  (void)pinnedConfig(g, defines, &unused, &s);
  std::vector<Config> out;
  const int64_t limit = sharedLimit(arch, limits.backend == "hip");
  for (Config& c : gemm::configSpace(g.kind).enumerate(limits.backend, limit).accepted)
    if (gemm::applicable(g.kind, c, s).ok()) out.push_back(std::move(c));
  return out;
}

Expected<gemm::LaunchPlan> exampleLaunch(const TemplateInfo& t, const std::string& arch,
                                         const DefineList& defines) {
  KTUNE_ASSIGN_OR_RETURN(auto limits, rowwise::limitsForArch(arch));
  const bool amd = limits.backend == "hip";
  KTUNE_ASSIGN_OR_RETURN(GemmExample g, gemmExample(t, arch, amd));
  Config c;
  gemm::GemmShape s;
  if (!pinnedConfig(g, defines, &c, &s))
    return Status::InvalidArgument("a knob of " + t.name + " is not an integer");
  return gemm::launchPlan(g.kind, c, servedRows(g.kind, c, s), nominalDevice(arch, amd));
}

std::string_view sourceOf(const TemplateInfo& t) {
  // A GEMM kernel's source is its folder's files with the shared GEMM part (gemm::kernelSource).
  for (gemm::KernelKind k : {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny, gemm::KernelKind::kMfma,
                             gemm::KernelKind::kWgmma, gemm::KernelKind::kTma,
                             gemm::KernelKind::kDecode})
    if (t.source_file == gemm::sourceFile(k)) return gemm::kernelSource(k);
  return embeddedSource(t.source_file.c_str());
}

}  // namespace ktune::templates
