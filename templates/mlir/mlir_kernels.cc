#include "templates/mlir/mlir_kernels.h"

#include <map>

#include "templates/embedded.h"
#include "base/device.h"

namespace ktune::templates {

std::string MlirRowwiseConfig::toString() const {
  return dtype + " VEC=" + std::to_string(vec) + " THREADS=" + std::to_string(threads) +
         " ROWS_PER_BLOCK=" + std::to_string(rows_per_block);
}

std::vector<std::string> mlirKernelNames() { return {"rmsnorm", "silu_mul"}; }

std::string mlirKernelEntry(const std::string& name) { return "ktune_" + name + "_mlir"; }

namespace {

int dtypeBytes(const std::string& t) { return t == "f32" ? 4 : (t == "bf16" || t == "f16") ? 2 : 0; }

Status checkConfig(const std::string& arch, const MlirRowwiseConfig& c) {
  const int warp = Arch(arch).isAmd() ? 64 : 32;
  if (!Arch(arch).isAmd() && !Arch(arch).isNvidia())
    return Status::InvalidArgument("unknown arch '" + arch + "' (expected sm_XX or gfxNNN)");
  if (dtypeBytes(c.dtype) == 0)
    return Status::InvalidArgument("dtype '" + c.dtype + "' is not bf16, f16 or f32");
  if (c.vec < 1 || (c.vec & (c.vec - 1)) != 0 || c.vec * dtypeBytes(c.dtype) > 16)
    return Status::InvalidArgument("VEC=" + std::to_string(c.vec) +
                                   " must be a power of two with VEC * sizeof(" + c.dtype +
                                   ") <= 16 bytes");
  if (c.threads < warp || c.threads > 1024 || c.threads % warp != 0)
    return Status::InvalidArgument("THREADS=" + std::to_string(c.threads) +
                                   " must be a multiple of the warp (" + std::to_string(warp) +
                                   ") up to 1024");
  if (c.rows_per_block < 1 || c.rows_per_block > 64)
    return Status::InvalidArgument("ROWS_PER_BLOCK must be in 1..64");
  return Status::Ok();
}

void replaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size()))
    s->replace(p, from.size(), to);
}

}  // namespace

Expected<std::string> mlirKernelSource(const std::string& name, const std::string& arch,
                                       const MlirRowwiseConfig& c) {
  const std::string file = "mlir/" + name + ".mlir";
  const std::string_view text = embeddedSource(file.c_str());
  if (text.empty() || (name != "rmsnorm" && name != "silu_mul"))
    return Status::NotFound("no MLIR kernel '" + name + "' (known: rmsnorm, silu_mul)");
  KTUNE_RETURN_IF_ERROR(checkConfig(arch, c));
  const int warp = Arch(arch).isAmd() ? 64 : 32;
  const bool f32 = c.dtype == "f32";
  const std::map<std::string, std::string> subst = {
      {"{{T}}", c.dtype},
      {"{{VEC}}", std::to_string(c.vec)},
      {"{{THREADS}}", std::to_string(c.threads)},
      {"{{ROWS_PER_BLOCK}}", std::to_string(c.rows_per_block)},
      {"{{WARP}}", std::to_string(warp)},
      {"{{HALF_WARP}}", std::to_string(warp / 2)},
      {"{{LOG2_WARP}}", warp == 64 ? "6" : "5"},
      {"{{WARPS}}", std::to_string(c.threads / warp)},
      // f32 needs no conversion; a same-type bitcast keeps the text's shape.
      {"{{EXT}}", f32 ? "arith.bitcast" : "arith.extf"},
      {"{{TRUNC}}", f32 ? "arith.bitcast" : "arith.truncf"}};
  std::string out = "// ktune: " + file + " for " + arch + ", " + c.toString() + "\n" +
                    std::string(text);
  for (const auto& [from, to] : subst) replaceAll(&out, from, to);
  return out;
}

std::string mlirKernelFileName(const std::string& name, const std::string& arch,
                               const MlirRowwiseConfig& c, const std::string& ext) {
  return name + "." + arch + "." + c.dtype + ".v" + std::to_string(c.vec) + ".t" +
         std::to_string(c.threads) + ".r" + std::to_string(c.rows_per_block) + "." + ext;
}

std::vector<MlirRowwiseConfig> mlirRowwiseConfigs(const std::string& arch,
                                                  const std::string& dtype) {
  std::vector<MlirRowwiseConfig> out;
  for (int vec : {2, 4, 8})
    for (int threads : {64, 128, 256, 512})
      for (int rows : {1, 2, 4}) {
        MlirRowwiseConfig c{dtype, vec, threads, rows};
        if (checkConfig(arch, c).ok()) out.push_back(c);
      }
  return out;
}

}  // namespace ktune::templates
