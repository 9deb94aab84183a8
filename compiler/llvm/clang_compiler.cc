#include "compiler/llvm/clang_compiler.h"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/analysis/amd_metadata.h"
#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"
#include "base/device.h"

#ifndef KTUNE_DEFAULT_CLANG
#define KTUNE_DEFAULT_CLANG ""
#endif

namespace ktune {

using namespace compiler_detail;

namespace clang_detail {

std::vector<std::string> deviceFlags(const std::string& arch, const std::string& include_dir) {
  if (Arch(arch).isNvidia()) return cudaDeviceFlags(arch, include_dir);
  return {"-x",
          "hip",
          "--offload-arch=" + arch,
          "--cuda-device-only",
          "-nogpulib",
          "-nogpuinc",
          "--no-gpu-bundle-output",
          // clang derives the HIP compilation-unit id (the __hip_cuid_* symbol) from the input's
          // path and the options; our input sits in a fresh temp dir, so every binary would differ
          // and the store could never dedup identical code. One fixed id keeps them reproducible
          // (each code object is linked alone, so no two units need distinct ids).
          "-cuid=ktune",
          "-O3",
          "-std=c++17",
          "-I" + include_dir};
}

std::string findClang(const std::string& requested) {
  auto resolve = [](const std::string& p) -> std::string {
    if (p.empty()) return "";
    if (p.find('/') != std::string::npos) return pathExists(p) ? p : "";
    return findProgram(p);
  };
  if (!requested.empty()) return resolve(requested);
  for (const std::string& c :
       {std::string(KTUNE_DEFAULT_CLANG), std::string("clang-19"), std::string("clang")}) {
    std::string p = resolve(c);
    if (!p.empty()) return p;
  }
  return "";
}

std::string findMlirTranslate(const std::string& clang) {
  for (const char* n : {"mlir-translate-19", "mlir-translate"}) {
    std::string p = findProgram(n);
    if (!p.empty()) return p;
  }
  const auto slash = clang.rfind('/');
  if (slash != std::string::npos && pathExists(clang.substr(0, slash) + "/mlir-translate"))
    return clang.substr(0, slash) + "/mlir-translate";
  return "";
}

// The source file plus prelude in a private temp dir; for name expressions, a host-side reference
// that makes the device compilation instantiate and emit the requested template kernel.
static Status writeSources(const TempDir& dir, const CompileRequest& req) {
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("prelude.cuh"), std::string(preludeSource())));
  if (Arch(req.arch).isNvidia()) KTUNE_RETURN_IF_ERROR(writeCudaShims(dir));
  std::string src = req.source;
  if (isNameExpression(req.entry))
    src += "\n[[maybe_unused]] static auto* ktune_entry_ref_ = &" + req.entry + ";\n";
  return writeFileAtomic(dir.file("kernel.hip"), src);
}

static Expected<ProcessResult> runClang(const std::string& clang, const CompileRequest& req,
                                        const TempDir& dir, const std::vector<std::string>& mode,
                                        int timeout_ms, std::vector<std::string>* used) {
  std::vector<std::string> argv = {clang};
  for (auto& f : deviceFlags(req.arch, dir.path())) argv.push_back(f);
  for (auto& d : defineFlags(req)) argv.push_back(d);
  for (auto& o : req.options) argv.push_back(o);
  for (auto& m : mode) argv.push_back(m);
  argv.push_back(dir.file("kernel.hip"));
  if (used) *used = argv;
  KTUNE_ASSIGN_OR_RETURN(auto r, runProcess(argv, "", timeout_ms));
  if (r.timed_out)
    return Status::Timeout("clang did not finish within " + std::to_string(timeout_ms) + " ms");
  if (r.signaled || r.exit_code != 0) {
    // Messages name the temp file; show the caller's file name instead.
    std::string log = r.err;
    const std::string tmp = dir.file("kernel.hip");
    const std::string shown = req.source_name.empty() ? "kernel.hip" : req.source_name;
    for (size_t p = log.find(tmp); p != std::string::npos; p = log.find(tmp, p + shown.size()))
      log.replace(p, tmp.size(), shown);
    return compileError("clang", req, log, argv);
  }
  return r;
}

Expected<std::string> emitLlvm(const std::string& clang, const CompileRequest& req,
                               int timeout_ms) {
  KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-clang-"));
  KTUNE_RETURN_IF_ERROR(writeSources(dir, req));
  KTUNE_ASSIGN_OR_RETURN(
      auto r, runClang(clang, req, dir, {"-emit-llvm", "-S", "-o", dir.file("kernel.ll")},
                       timeout_ms, nullptr));
  return readFile(dir.file("kernel.ll"));
}

std::string mlirView(const std::string& mlir_translate, const std::string& llvm_ir,
                     int timeout_ms) {
  auto v = ir_detail::importLlvmIr(mlir_translate, llvm_ir, timeout_ms);
  return v.ok() ? *v : std::string(kMlirViewUnavailable) + v.status().message();
}

}  // namespace clang_detail

namespace {

using namespace clang_detail;

class ClangCompiler final : public Compiler {
 public:
  ClangCompiler(std::string clang, std::string version, std::vector<std::string> cpus,
                ClangConfig config)
      : clang_(std::move(clang)),
        version_(std::move(version)),
        cpus_(std::move(cpus)),
        config_(std::move(config)) {
    mlir_ = config_.mlir_translate.empty() ? findMlirTranslate(clang_) : config_.mlir_translate;
  }

  std::string name() const override { return "clang"; }
  std::string version() const override { return version_; }
  bool supportsArch(const std::string& arch) const override {
    const std::string base = arch.substr(0, arch.find(':'));
    return base.rfind("gfx", 0) == 0 && std::find(cpus_.begin(), cpus_.end(), base) != cpus_.end();
  }

  Expected<CodeObject> compile(const CompileRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    KTUNE_RETURN_IF_ERROR(checkRequest(req));
    if (!supportsArch(req.arch))
      return Status::Unsupported(
          "clang " + version_ + " (" + clang_ + ") has no AMDGPU target '" + req.arch +
          "' (it knows gfx600..gfx1201, see clang --target=amdgcn-amd-amdhsa "
          "-nogpulib -print-supported-cpus)");
    KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-clang-"));
    KTUNE_RETURN_IF_ERROR(writeSources(dir, req));
    CodeObject co = codeObjectFor(req, "hsaco", name(), version_);
    // 1) assembly: the ISA view and the metadata block.
    KTUNE_ASSIGN_OR_RETURN(auto s, runClang(clang_, req, dir, {"-S", "-o", dir.file("kernel.s")},
                                            config_.timeout_ms, nullptr));
    KTUNE_ASSIGN_OR_RETURN(std::string isa, readFile(dir.file("kernel.s")));
    // 2) the loadable code object (clang links it with lld: an ET_DYN hsaco).
    KTUNE_ASSIGN_OR_RETURN(auto c,
                           runClang(clang_, req, dir, {"-c", "-o", dir.file("kernel.hsaco")},
                                    config_.timeout_ms, &co.options));
    co.options.erase(co.options.begin());  // argv[0]
    co.log = s.err + c.err;
    KTUNE_ASSIGN_OR_RETURN(co.binary, readFile(dir.file("kernel.hsaco")));
    if (co.binary.compare(0, 4,
                          "\x7f"
                          "ELF") != 0)
      return Status::Internal("clang produced no ELF code object for " + req.arch);
    const auto kernels = parseAmdgpuMetadataYaml(isa);
    std::vector<std::string> names;
    for (const auto& k : kernels) names.push_back(k.name);
    auto entry = resolveEntry(req.entry, names);
    if (!entry.ok()) return compileError("clang", req, entry.status().message(), co.options);
    co.lowered_entry = *entry;
    if (const AmdKernelMeta* k = findAmdKernel(kernels, co.lowered_entry))
      co.resources = amdResources(*k);
    if (req.dumps & kDumpSource) co.dumps["source"] = instantiatedSource(req);
    if (req.dumps & kDumpIsa) co.dumps["isa"] = isa;
    if (req.dumps & (kDumpLlvm | kDumpMlir)) {
      auto ir = emitLlvm(clang_, req, config_.timeout_ms);
      const std::string text = ir.ok() ? *ir : "LLVM IR unavailable: " + ir.status().message();
      if (req.dumps & kDumpLlvm) co.dumps["llvm"] = text;
      if (req.dumps & kDumpMlir)
        co.dumps["mlir"] = ir.ok() ? mlirView(mlir_, *ir, config_.timeout_ms) : text;
    }
    if (req.dumps & kDumpPtx) co.dumps["ptx"] = "PTX does not apply to AMD targets";
    if (req.dumps & kDumpSass) co.dumps["sass"] = "SASS does not apply to AMD targets";
    co.compile_ms = msSince(t0);
    return co;
  }

 private:
  std::string clang_;
  std::string version_;
  std::vector<std::string> cpus_;
  ClangConfig config_;
  std::string mlir_;
};

}  // namespace

Expected<std::unique_ptr<Compiler>> openLlvmAmdgpuCompiler(const ClangConfig& config) {
  const std::string clang = findClang(config.clang);
  if (clang.empty())
    return Status::Unavailable("clang not found (tried " +
                               (config.clang.empty()
                                    ? std::string(KTUNE_DEFAULT_CLANG) + ", clang-19, clang on PATH"
                                    : config.clang) +
                               "); install clang-19 or set KTUNE_CLANG");
  auto v = runProcess({clang, "--version"}, "", 30000);
  if (!v.ok() || v->exit_code != 0)
    return Status::Unavailable("cannot run " + clang + " --version" +
                               (v.ok() ? ": " + v->err : ": " + v.status().message()));
  // "Debian clang version 19.1.7 (3~deb12u1)" -> "19.1.7".
  std::string version = v->out.substr(0, v->out.find('\n'));
  const auto at = version.find("version ");
  if (at != std::string::npos) {
    version = version.substr(at + 8);
    version = version.substr(0, version.find(' '));
  }
  auto cpus = runProcess(
      {clang, "--target=amdgcn-amd-amdhsa", "-nogpulib", "-print-supported-cpus"}, "", 30000);
  std::vector<std::string> list;
  if (cpus.ok()) {
    std::istringstream in(cpus->out + "\n" + cpus->err);
    std::string w;
    while (in >> w)
      if (w.rfind("gfx", 0) == 0 && w.find("generic") == std::string::npos) list.push_back(w);
  }
  if (list.empty())
    return Status::Unavailable(
        clang + " (version " + version +
        ") has no AMDGPU backend: -print-supported-cpus lists no gfx target");
  return std::unique_ptr<Compiler>(new ClangCompiler(clang, version, std::move(list), config));
}

Expected<std::unique_ptr<Compiler>> openLlvmAmdgpuCompiler(const std::string& clang) {
  ClangConfig c;
  c.clang = clang;
  return openLlvmAmdgpuCompiler(c);
}

}  // namespace ktune
