// The IR front door's toolchain (found once), the language names, and reading a module file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"
#include "base/device.h"

#ifndef KTUNE_DEFAULT_CUDA_INCLUDE
#define KTUNE_DEFAULT_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

namespace ktune {

namespace {
struct LangName {
  Language lang;
  const char* name;
};
constexpr LangName kLangNames[] = {
    {Language::kCpp, "cpp"},     {Language::kPtx, "ptx"},     {Language::kLlvmIr, "llvm"},
    {Language::kAmdgcnAsm, "amdgcn"}, {Language::kMlir, "mlir"}, {Language::kCubin, "cubin"},
    {Language::kHsaco, "hsaco"}};
// Extra spellings accepted by parseLanguage (and, with a dot, as file extensions).
constexpr LangName kLangAliases[] = {
    {Language::kCpp, "cu"},        {Language::kCpp, "cuh"},      {Language::kCpp, "hip"},
    {Language::kCpp, "cc"},        {Language::kCpp, "cuda"},     {Language::kCpp, "c++"},
    {Language::kLlvmIr, "ll"},     {Language::kAmdgcnAsm, "s"},  {Language::kAmdgcnAsm, "asm"},
    {Language::kHsaco, "co"},      {Language::kLlvmIr, "llvm-nvptx"},
    {Language::kLlvmIr, "llvm-amdgpu"}};
}  // namespace

const char* languageName(Language l) {
  for (const auto& n : kLangNames)
    if (n.lang == l) return n.name;
  return "unknown";
}

Expected<Language> parseLanguage(const std::string& name) {
  for (const auto& n : kLangNames)
    if (name == n.name) return n.lang;
  for (const auto& n : kLangAliases)
    if (name == n.name) return n.lang;
  return Status::InvalidArgument("unknown language '" + name +
                                 "' (expected cpp, ptx, llvm, amdgcn, mlir, cubin or hsaco)");
}

Expected<Language> languageFromPath(const std::string& path) {
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    auto l = parseLanguage(path.substr(dot + 1));
    if (l.ok() && path.substr(dot + 1) != "cuda" && path.substr(dot + 1) != "c++") return l;
  }
  return Status::InvalidArgument(
      "cannot tell the language of '" + path +
      "' from its extension (known: .cu .cuh .hip .cc .cpp .ptx .ll .s .asm .mlir .cubin .hsaco "
      ".co); pass --lang");
}

// Reads at most kMaxModuleFileBytes of a regular file (not a FIFO or device that would block or
// never end).
static Expected<std::string> readModuleFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0;
  ::close(fd);
  if (!ok) return Status::IoError("cannot stat " + path);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + " is not a regular file");
  if (uint64_t(st.st_size) > kMaxModuleFileBytes)
    return Status::InvalidArgument(path + " is " + std::to_string(st.st_size) +
                                   " bytes, more than the " +
                                   std::to_string(kMaxModuleFileBytes >> 20) + " MiB a module may be");
  KTUNE_ASSIGN_OR_RETURN(std::string text, readFile(path));
  if (text.size() > kMaxModuleFileBytes)  // grew between stat and read
    return Status::InvalidArgument(path + " grew past " +
                                   std::to_string(kMaxModuleFileBytes >> 20) + " MiB while read");
  return text;
}

Expected<CompileRequest> requestFromFile(const std::string& path, const std::string& arch,
                                         const std::string& entry, const std::string& language) {
  CompileRequest req;
  if (!language.empty()) {
    KTUNE_ASSIGN_OR_RETURN(req.language, parseLanguage(language));
  } else {
    KTUNE_ASSIGN_OR_RETURN(req.language, languageFromPath(path));
  }
  KTUNE_ASSIGN_OR_RETURN(req.source, readModuleFile(path));
  req.source_name = path;
  req.entry = entry;
  req.arch = arch;
  return req;
}

Expected<std::unique_ptr<Compiler>> compilerFor(const CompileRequest& req, const std::string& clang) {
  if (req.language == Language::kCpp) return compilerForArch(req.arch, clang);
  return openIrCompiler();
}

}  // namespace ktune

namespace ktune::ir_detail {

bool isNvidiaArch(const std::string& arch) { return Arch(arch).isNvidia(); }
bool isAmdArch(const std::string& arch) { return Arch(arch).isAmd(); }

// Bumped whenever the steps or flags of the IR pipelines change, so store entries made by an
// older pipeline are not taken for this one's.
constexpr int kIrPipelineVersion = 3;

std::string Toolchain::versions() const {
  std::string s = "pipeline " + std::to_string(kIrPipelineVersion) + "; llvm " +
                  (llvm_version.empty() ? std::string("none") : llvm_version);
  s += "; nvjitlink " + (jitlink_version.empty() ? std::string("none") : jitlink_version);
  s += "; ptxas " + (ptxas_version.empty() ? std::string("none") : ptxas_version);
  return s;
}

// The CUDA toolkit root the NVRTC headers came from (…/include -> …).
static std::string cudaRoot() { return parentDir(KTUNE_DEFAULT_CUDA_INCLUDE); }

static std::string findTool(const char* versioned, const char* plain, const std::string& dir = "") {
  for (const char* n : {versioned, plain}) {
    if (!n) continue;
    std::string p = findProgram(n);
    if (!p.empty()) return p;
    if (!dir.empty() && pathExists(dir + "/" + n)) return dir + "/" + n;
  }
  return "";
}

// The first line of `tool --version` holding "version X", as X ("19.1.7"; ptxas: "V13.0.88").
static std::string toolVersion(const std::string& tool) {
  if (tool.empty()) return "";
  auto r = runProcess({tool, "--version"}, "", 30000);
  if (!r.ok() || r->exit_code != 0) return "";
  const std::string text = r->out + r->err;
  for (const char* marker : {"LLVM version ", ", V", "version "}) {
    const auto at = text.find(marker);
    if (at == std::string::npos) continue;
    const auto start = at + std::strlen(marker);
    return text.substr(start, text.find_first_of(" \n", start) - start);
  }
  return "";
}

std::shared_ptr<NvJitLink> openNvJitLink(const std::string& cuda_root, std::string* version,
                                         std::string* why);  // nvidia.cc

const Toolchain& toolchain() {
  static const Toolchain* tc = [] {
    auto* t = new Toolchain();
    t->llc = findTool("llc-19", "llc");
    t->opt = findTool("opt-19", "opt");
    t->llvm_mc = findTool("llvm-mc-19", "llvm-mc");
    t->lld = findTool("ld.lld-19", "ld.lld");
    t->llvm_link = findTool("llvm-link-19", "llvm-link");
    t->readelf = findTool("llvm-readelf-19", "llvm-readelf");
    t->objdump = findTool("llvm-objdump-19", "llvm-objdump");
    t->mlir_opt = findTool("mlir-opt-19", "mlir-opt");
    t->mlir_translate = findTool("mlir-translate-19", "mlir-translate");
    const std::string root = cudaRoot();
    t->ptxas = findTool("ptxas", nullptr, root + "/bin");
    if (t->ptxas.empty() && pathExists("/usr/local/cuda/bin/ptxas"))
      t->ptxas = "/usr/local/cuda/bin/ptxas";
    for (const std::string& r : {root, std::string("/usr/local/cuda")}) {
      const std::string bc = r + "/nvvm/libdevice/libdevice.10.bc";
      if (t->libdevice.empty() && pathExists(bc)) t->libdevice = bc;
    }
    for (const char* d : {"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/usr/lib/amdgcn/bitcode",
                          "/opt/rocm/amdgcn/bitcode"})
      if (t->amd_bitcode.empty() && pathExists(std::string(d) + "/ocml.bc")) t->amd_bitcode = d;
    t->llvm_version = toolVersion(t->llc);
    t->ptxas_version = toolVersion(t->ptxas);
    t->jitlink = openNvJitLink(root, &t->jitlink_version, &t->jitlink_missing);
    return t;
  }();
  return *tc;
}

Expected<std::string> need(const std::string& path, const std::string& tool,
                           const std::string& package) {
  if (!path.empty()) return path;
  return Status::Unavailable(tool + " not found (looked on PATH" +
                             (tool == "ptxas" ? " and in " + cudaRoot() + "/bin" : "") +
                             "): install " + package);
}

Expected<std::string> runTool(const std::vector<std::string>& argv, const std::string& input,
                              const CompileRequest& req) {
  constexpr int kTimeoutMs = 300000;
  KTUNE_ASSIGN_OR_RETURN(auto r, runProcess(argv, input, kTimeoutMs));
  std::string tool = argv[0].substr(argv[0].rfind('/') + 1);
  if (r.timed_out)
    return Status::Timeout(tool + " did not finish within " + std::to_string(kTimeoutMs) + " ms");
  if (r.signaled || r.exit_code != 0)
    return compiler_detail::compileError(
        tool, req, r.err.empty() ? r.out : r.err,
        std::vector<std::string>(argv.begin() + 1, argv.end()));
  return std::move(r.out);
}

Expected<std::string> optimize(const CompileRequest& req, const std::string& ir) {
  KTUNE_ASSIGN_OR_RETURN(std::string opt, need(toolchain().opt, "opt-19", "llvm-19"));
  return runTool({opt, "-O3", "-S", "-o", "-", "-"}, ir, req);
}

}  // namespace ktune::ir_detail
