#include "templates/mlir/mlir_kernels.h"

#include <cstdint>
#include <map>
#include <string_view>

#include "templates/embedded.h"
#include "base/device.h"

namespace ktune::templates {

std::string MlirRowwiseConfig::toString() const {
  return dtype + " VEC=" + std::to_string(vec) + " THREADS=" + std::to_string(threads) +
         " ROWS_PER_BLOCK=" + std::to_string(rows_per_block) +
         (items > 0 ? " ITEMS=" + std::to_string(items) : "");
}

std::vector<std::string> mlirKernelNames() { return {"rmsnorm", "silu_mul"}; }

std::string mlirKernelEntry(const std::string& name) { return "ktune_" + name + "_mlir"; }

namespace {

void replaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size()))
    s->replace(p, from.size(), to);
}

int dtypeBytes(const std::string& t) { return t == "f32" ? 4 : (t == "bf16" || t == "f16") ? 2 : 0; }

Status checkConfig(const std::string& name, const std::string& arch, const MlirRowwiseConfig& c) {
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
  if (name == "rmsnorm" && c.threads * c.rows_per_block > 1024)
    return Status::InvalidArgument("THREADS * ROWS_PER_BLOCK must be <= 1024 (one block)");
  if (c.items < 0 || c.items > kMlirRmsNormMaxItems || (name != "rmsnorm" && c.items != 0))
    return Status::InvalidArgument("ITEMS=" + std::to_string(c.items) + " must be in 0.." +
                                   std::to_string(kMlirRmsNormMaxItems) + " (rmsnorm only)");
  return Status::Ok();
}

// Writes the lines between "// FOR_EACH_<name>" and "// END_FOR_EACH_<name>" `count` times, with
// {{<name>}} = k, {{<name>1}} = k + 1 and {{<name>_OFFSET}} = k * stride substituted; drops the
// marker lines. An unrolled loop, written as the text a generating compiler would emit.
std::string expandRepeats(const std::string& text, const std::string& name, int count,
                          int stride) {
  const std::string open = "// FOR_EACH_" + name, close = "// END_FOR_EACH_" + name;
  std::string out, block;
  bool inside = false;
  for (size_t p = 0; p < text.size();) {
    size_t e = text.find('\n', p);
    e = e == std::string::npos ? text.size() : e + 1;
    const std::string line = text.substr(p, e - p);
    p = e;
    const size_t first = line.find_first_not_of(' ');
    const std::string trimmed = first == std::string::npos ? "" : line.substr(first);
    const auto is = [&](const std::string& m) {
      return trimmed.compare(0, m.size(), m) == 0 &&
             trimmed.find_first_not_of("\r\n", m.size()) == std::string::npos;
    };
    if (is(open)) {
      inside = true;
      block.clear();
    } else if (is(close)) {
      inside = false;
      for (int k = 0; k < count; ++k) {
        std::string b = block;
        replaceAll(&b, "{{" + name + "_OFFSET}}", std::to_string(k * stride));
        replaceAll(&b, "{{" + name + "1}}", std::to_string(k + 1));
        replaceAll(&b, "{{" + name + "}}", std::to_string(k));
        out += b;
      }
    } else {
      (inside ? block : out) += line;
    }
  }
  return out;
}

// Every repeated block of the kernels: register items, vector lanes, butterfly steps, warps.
std::string expandAll(std::string text, const MlirRowwiseConfig& c, int warp) {
  text = expandRepeats(text, "ITEM", c.items, c.threads);
  text = expandRepeats(text, "LANE", c.vec, 1);
  text = expandRepeats(text, "STEP", warp == 64 ? 6 : 5, 1);
  return expandRepeats(text, "PART", c.threads / warp, 1);
}

}  // namespace

Expected<std::string> mlirKernelSource(const std::string& name, const std::string& arch,
                                       const MlirRowwiseConfig& c) {
  const std::string file = "mlir/" + name + ".mlir";
  const std::string_view text = embeddedSource(file.c_str());
  if (text.empty() || (name != "rmsnorm" && name != "silu_mul"))
    return Status::NotFound("no MLIR kernel '" + name + "' (known: rmsnorm, silu_mul)");
  KTUNE_RETURN_IF_ERROR(checkConfig(name, arch, c));
  const int warp = Arch(arch).isAmd() ? 64 : 32;
  const bool f32 = c.dtype == "f32", bf16 = c.dtype == "bf16", f16 = c.dtype == "f16";
  const std::map<std::string, std::string> subst = {
      {"{{T}}", c.dtype},
      // Memory holds 16-bit types as integers: llc splits a load of <4 x bfloat> in two.
      {"{{ST}}", f32 ? "f32" : "i16"},
      {"{{VEC}}", std::to_string(c.vec)},
      {"{{THREADS}}", std::to_string(c.threads)},
      {"{{ROWS_PER_BLOCK}}", std::to_string(c.rows_per_block)},
      {"{{WARP}}", std::to_string(warp)},
      {"{{HALF_WARP}}", std::to_string(warp / 2)},
      {"{{LOG2_WARP}}", warp == 64 ? "6" : "5"},
      // Target intrinsics called as functions (no math library to link): 1/sqrt(x), 2^x.
      {"{{RSQRT}}", Arch(arch).isAmd() ? "llvm.amdgcn.rsq.f32" : "llvm.nvvm.rsqrt.approx.f"},
      {"{{EXP2}}", Arch(arch).isAmd() ? "llvm.exp2.f32" : "llvm.nvvm.ex2.approx.f"},
      {"{{WARPS}}", std::to_string(c.threads / warp)},
      {"{{ITEMS}}", std::to_string(c.items)},
      {"{{HEAD}}", std::to_string(c.items * c.threads)},
      // f32 needs no conversion; a same-type bitcast keeps the text's shape.
      {"{{EXT}}", f32 ? "arith.bitcast" : "arith.extf"},
      {"{{TRUNC}}", f32 ? "arith.bitcast" : "arith.truncf"},
      // rmsnorm's second widening (raw -> wide -> op with a constant -> f32): bf16 through
      // integers (bits << 16); f16 as a plain extf (x * 1.0); f32 as bits (x << 0).
      {"{{RAW}}", bf16 ? "i16" : f16 ? "f16" : "i32"},
      {"{{WIDEN}}", bf16 ? "arith.extui" : f16 ? "arith.extf" : "arith.bitcast"},
      {"{{WIDE}}", f16 ? "f32" : "i32"},
      {"{{LATE_OP}}", f16 ? "arith.mulf" : "arith.shli"},
      {"{{LATE_CONST}}", bf16 ? "dense<16>" : f16 ? "dense<1.0>" : "dense<0>"}};
  std::string out = "// ktune: " + file + " for " + arch + ", " + c.toString() + "\n" +
                    expandAll(std::string(text), c, warp);
  for (const auto& [from, to] : subst) replaceAll(&out, from, to);
  return out;
}

std::string mlirKernelFileName(const std::string& name, const std::string& arch,
                               const MlirRowwiseConfig& c, const std::string& ext) {
  return name + "." + arch + "." + c.dtype + ".v" + std::to_string(c.vec) + ".t" +
         std::to_string(c.threads) + ".r" + std::to_string(c.rows_per_block) +
         (c.items > 0 ? ".i" + std::to_string(c.items) : "") + "." + ext;
}

int mlirRmsNormItems(int64_t d, const MlirRowwiseConfig& c) {
  const int64_t per_pass = int64_t(c.vec) * c.threads;
  if (d <= 0 || per_pass <= 0) return 0;
  const int64_t need = (d + per_pass - 1) / per_pass;
  int items = 1;
  while (items < need && items < kMlirRmsNormMaxItems) items *= 2;
  return items;
}

MlirLaunchShape mlirKernelLaunch(const std::string& name, const MlirRowwiseConfig& c, int64_t rows,
                                 int64_t d) {
  const auto row_blocks = unsigned((rows + c.rows_per_block - 1) / c.rows_per_block);
  if (name == "rmsnorm")
    return {Dim3{row_blocks, 1, 1}, Dim3{unsigned(c.threads), unsigned(c.rows_per_block), 1}};
  const int64_t dv = d / c.vec;
  return {Dim3{unsigned((dv + c.threads - 1) / c.threads), row_blocks, 1},
          Dim3{unsigned(c.threads), 1, 1}};
}

MlirRowwiseConfig mlirConfigFor(const std::string& name, int64_t d, MlirRowwiseConfig c) {
  if (name == "rmsnorm") c.items = mlirRmsNormItems(d, c);
  return c;
}

std::vector<MlirRowwiseConfig> mlirRowwiseConfigs(const std::string& name, const std::string& arch,
                                                  const std::string& dtype) {
  std::vector<MlirRowwiseConfig> out;
  for (int vec : {2, 4, 8})
    for (int threads : {64, 128, 256, 512})
      for (int rows : {1, 2, 4}) {
        MlirRowwiseConfig c{dtype, vec, threads, rows, 0};
        if (checkConfig(name, arch, c).ok()) out.push_back(c);
      }
  return out;
}

}  // namespace ktune::templates
