#include "templates/catalog.h"

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
       "AMD MFMA GEMM (16x16 or 32x32 instructions, waves_per_eu, LDS stages)", "bf16 NN 4096^3"},
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

Expected<std::vector<std::pair<std::string, std::string>>> defaultDefines(const TemplateInfo& t,
                                                                         const std::string& arch) {
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
  gemm::KernelKind kind;
  gemm::GemmShape s;
  if (t.name == "gemm_mma") {
    kind = gemm::KernelKind::kMma;
    s = gemm::denseShape(gemm::Layout::kNN, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 4096,
                         4096, 4096);
  } else if (t.name == "gemm_skinny") {
    kind = gemm::KernelKind::kSkinny;
    s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 16, 4096,
                         4096);
  } else if (t.name == "gemm_decode") {
    kind = gemm::KernelKind::kDecode;
    s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 1, 4096,
                         4096);
  } else if (t.name == "gemm_wgmma" || t.name == "gemm_tma") {
    if (arch != "sm_90a")
      return Status::Unsupported("template '" + t.name + "' needs arch sm_90a (wgmma), got " + arch);
    kind = t.name == "gemm_tma" ? gemm::KernelKind::kTma : gemm::KernelKind::kWgmma;
    s = gemm::denseShape(gemm::Layout::kNT, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 4096,
                         4096, 4096);
  } else if (t.name == "gemm_mfma") {
    kind = gemm::KernelKind::kMfma;
    s = gemm::denseShape(gemm::Layout::kNN, gemm::ElemType::kBF16, gemm::ElemType::kBF16, 4096,
                         4096, 4096);
  } else {
    return Status::NotFound("no defaults for template '" + t.name + "'");
  }
  if ((kind == gemm::KernelKind::kMfma) != amd)
    return Status::Unsupported("template '" + t.name + "' has no kernel for " + arch + " (use " +
                               (amd ? "gemm_mfma" : "gemm_mma, gemm_skinny, gemm_decode, gemm_wgmma or gemm_tma") +
                               ")");
  auto configs = gemm::curatedConfigs(kind, s);
  if (configs.empty()) return Status::Internal("no curated config for " + t.name);
  return gemm::defines(kind, configs.front(), s);
}

std::string_view sourceOf(const TemplateInfo& t) {
  // A GEMM kernel's source is its folder's files with the shared GEMM part (gemm::kernelSource).
  for (gemm::KernelKind k : {gemm::KernelKind::kMma, gemm::KernelKind::kSkinny, gemm::KernelKind::kMfma,
                             gemm::KernelKind::kWgmma, gemm::KernelKind::kTma, gemm::KernelKind::kDecode})
    if (t.source_file == gemm::sourceFile(k)) return gemm::kernelSource(k);
  return embeddedSource(t.source_file.c_str());
}

}  // namespace ktune::templates
