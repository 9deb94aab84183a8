#include "templates/catalog.h"

#include "templates/embedded.h"

namespace ktune::templates {

const std::vector<TemplateInfo>& catalog() {
  static const std::vector<TemplateInfo> kCatalog = {
      {"rmsnorm", "rmsnorm.cuh", "ktune_rmsnorm",
       "RMSNorm y = x * rsqrt(mean(x^2) + eps) * w, optional fused residual add",
       {{"DTYPE", "bf16"}, {"VEC", "8"}, {"THREADS", "256"}, {"ROWS_PER_BLOCK", "1"}},
       {{"DTYPE", "bf16"}, {"VEC", "8"}, {"THREADS", "256"}, {"ROWS_PER_BLOCK", "1"}}},
      {"silu_mul", "silu_mul.cuh", "ktune_silu_mul", "out = silu(x[:, :d]) * x[:, d:]",
       {{"DTYPE", "bf16"}, {"VEC", "8"}, {"THREADS", "256"}, {"ROWS_PER_BLOCK", "1"}},
       {{"DTYPE", "bf16"}, {"VEC", "8"}, {"THREADS", "256"}, {"ROWS_PER_BLOCK", "1"}}},
      {"copy", "copy.cuh", "ktune_copy", "16-byte vectorized device copy (bandwidth peer)",
       {}, {}},
      {"gemm_mma", "gemm_mma.cuh", "ktune_gemm_mma",
       "NVIDIA mma.sync m16n8k16 GEMM with a cp.async multistage pipeline (sm_80+)", {}, {}},
      {"gemm_skinny", "gemm_skinny.cuh", "ktune_gemm_skinny",
       "weight-streaming GEMM for M <= 64 (decode shapes)", {}, {}},
      {"gemm_mfma", "gemm_mfma.cuh", "ktune_gemm_mfma",
       "AMD MFMA GEMM (16x16 or 32x32 instructions, waves_per_eu, LDS stages)", {}, {}},
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

std::string_view sourceOf(const TemplateInfo& t) { return embeddedSource(t.source_file.c_str()); }

}  // namespace ktune::templates
