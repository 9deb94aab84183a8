// The IR front door's NVIDIA steps: LLVM IR -> PTX (llc), PTX -> cubin (nvJitLink or ptxas), and
// the checks of a prebuilt cubin.
#include <cstring>
#include <regex>

#include "base/dylib.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"
#include "compiler/nvrtc/nvrtc_compiler.h"

namespace ktune::ir_detail {

using compiler_detail::TempDir;

// libnvJitLink's C ABI (nvJitLink.h), declared here so no CUDA header is needed to build: the
// entry points ktune uses (nvJitLink<name>).
#define KTUNE_NVJITLINK_ENTRY_POINTS(X)                \
  X(int, Create, (Handle*, uint32_t, const char**))    \
  X(int, Destroy, (Handle*))                           \
  X(int, AddData, (Handle, int, const void*, size_t, const char*)) \
  X(int, Complete, (Handle))                           \
  X(int, GetLinkedCubinSize, (Handle, size_t*))        \
  X(int, GetLinkedCubin, (Handle, void*))              \
  X(int, GetErrorLogSize, (Handle, size_t*))           \
  X(int, GetErrorLog, (Handle, char*))                 \
  X(int, GetInfoLogSize, (Handle, size_t*))            \
  X(int, GetInfoLog, (Handle, char*))                  \
  X(int, Version, (unsigned*, unsigned*))

class NvJitLink {
 public:
  using Handle = struct nvJitLink*;
  DynLib lib;
  KTUNE_DYLIB_ENTRY_POINTS(KTUNE_NVJITLINK_ENTRY_POINTS)
  static constexpr int kInputPtx = 2;

  std::string log(Handle h, bool error) const {
    size_t n = 0;
    if ((error ? GetErrorLogSize(h, &n) : GetInfoLogSize(h, &n)) != 0 || n == 0) return "";
    std::string s(n, '\0');
    if ((error ? GetErrorLog(h, s.data()) : GetInfoLog(h, s.data())) != 0) return "";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
};

std::shared_ptr<NvJitLink> openNvJitLink(const std::string& cuda_root, std::string* version,
                                         std::string* why) {
  std::vector<std::string> names;
  for (const std::string& dir : {std::string(), cuda_root + "/lib64/", cuda_root + "/lib/"})
    for (const char* n : {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"})
      names.push_back(dir + n);
  auto lib = DynLib::open(names, "nvJitLink");
  if (!lib.ok()) {
    *why = lib.status().message();
    return nullptr;
  }
  auto j = std::make_shared<NvJitLink>();
  j->lib = std::move(*lib);
  if (Status s = j->bindEntryPoints(j->lib, "nvJitLink"); !s.ok()) {
    *why = s.message();
    return nullptr;
  }
  unsigned major = 0, minor = 0;
  if (j->Version(&major, &minor) == 0)
    *version = std::to_string(major) + "." + std::to_string(minor);
  return j;
}

std::vector<std::string> ptxLlcArgv(const CompileRequest& req, const std::string& input) {
  std::vector<std::string> argv = {toolchain().llc, "-O3", "-march=nvptx64", "-mcpu=" + req.arch};
  for (const auto& o : req.options) argv.push_back(o);
  argv.insert(argv.end(), {"-o", "-", input});
  return argv;
}

Expected<std::string> llvmToPtx(const CompileRequest& req, const std::string& ir,
                                std::string* chain, EarlyTool* early_llc) {
  const Toolchain& tc = toolchain();
  KTUNE_RETURN_IF_ERROR(need(tc.llc, "llc-19", "llvm-19").status());
  std::string module = ir;
  // MLIR's math lowering and clang's CUDA headers call libdevice (__nv_expf, ...): link the
  // functions used and inline them, as nvcc does, or ptxas fails on an unresolved extern.
  if (ir.find("@__nv_") != std::string::npos && !tc.libdevice.empty()) {
    KTUNE_ASSIGN_OR_RETURN(std::string link, need(tc.llvm_link, "llvm-link-19", "llvm-19"));
    KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-ir-"));
    KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("in.ll"), ir));
    KTUNE_ASSIGN_OR_RETURN(module, runTool({link, "-S", "--internalize", "--only-needed",
                                            dir.file("in.ll"), tc.libdevice, "-o", "-"},
                                           "", req));
    KTUNE_ASSIGN_OR_RETURN(module, optimize(req, module));
    *chain += "llvm-link+opt+";
  }
  return runToolOrEarly(early_llc, ptxLlcArgv(req, "-"), module, req);
}

static Status cubinFromJitLink(const NvJitLink& j, const CompileRequest& req,
                               const std::string& ptx, CodeObject* co) {
  std::vector<std::string> opts = {"-arch=" + req.arch, "-verbose"};
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  NvJitLink::Handle h = nullptr;
  if (j.Create(&h, uint32_t(argv.size()), argv.data()) != 0)
    return Status::Internal("nvJitLinkCreate failed for arch " + req.arch);
  int rc = j.AddData(h, NvJitLink::kInputPtx, ptx.data(), ptx.size(), "module.ptx");
  if (rc == 0) rc = j.Complete(h);
  co->log = j.log(h, false);
  Status s;
  size_t n = 0;
  if (rc != 0) {
    s = compiler_detail::compileError("nvJitLink", req, j.log(h, true) + co->log, opts);
  } else if (j.GetLinkedCubinSize(h, &n) != 0 || n == 0) {
    s = Status::Internal("nvJitLink produced no cubin for " + req.arch);
  } else {
    co->binary.resize(n);
    if (j.GetLinkedCubin(h, co->binary.data()) != 0) s = Status::Internal("nvJitLinkGetLinkedCubin");
  }
  j.Destroy(&h);
  co->compiler = "nvjitlink";
  co->options = opts;
  return s;
}

static Status cubinFromPtxas(const CompileRequest& req, const std::string& ptx, CodeObject* co) {
  const Toolchain& tc = toolchain();
  KTUNE_ASSIGN_OR_RETURN(std::string ptxas,
                         need(tc.ptxas, "ptxas",
                              "the CUDA toolkit (ptxas or libnvJitLink; nvJitLink: " +
                                  tc.jitlink_missing + ")"));
  KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-ir-"));
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("module.ptx"), ptx));
  std::vector<std::string> argv = {ptxas, "-arch=" + req.arch, "-v"};
  argv.insert(argv.end(), {dir.file("module.ptx"), "-o", dir.file("module.cubin")});
  KTUNE_ASSIGN_OR_RETURN(auto r, runProcess(argv, "", 300000));
  co->log = r.err + r.out;
  co->compiler = "ptxas";
  co->options.assign(argv.begin() + 1, argv.end() - 3);
  if (r.timed_out || r.signaled || r.exit_code != 0)
    return compiler_detail::compileError("ptxas", req, co->log, co->options);
  KTUNE_ASSIGN_OR_RETURN(co->binary, readFile(dir.file("module.cubin")));
  return Status::Ok();
}

Status ptxToCubin(const CompileRequest& req, const std::string& ptx, CodeObject* co) {
  const Toolchain& tc = toolchain();
  Status s = tc.jitlink ? cubinFromJitLink(*tc.jitlink, req, ptx, co)
                        : cubinFromPtxas(req, ptx, co);
  if (!s.ok()) return s;
  if (!parsePtxasReport(co->log, co->lowered_entry, &co->resources))
    cubinResources(co->binary, co->lowered_entry, &co->resources);
  co->resources.wave_size = 32;
  return Status::Ok();
}

std::vector<std::string> ptxKernels(const std::string& ptx) {
  static const std::regex re(R"(\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*))");
  return compiler_detail::regexCaptures(ptx, re);
}

// Little-endian field of an ELF image; 0 past the end.
static uint64_t elfField(const std::string& elf, uint64_t off, size_t n) {
  uint64_t v = 0;
  if (off + n > elf.size()) return 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(elf[off + i])) << (8 * i);
  return v;
}

std::vector<std::string> cubinKernels(const std::string& elf) {
  std::vector<std::string> out;
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0 || elf[4] != 2) return out;
  const uint64_t shoff = elfField(elf, 0x28, 8), shentsize = elfField(elf, 0x3a, 2),
                 shnum = elfField(elf, 0x3c, 2), shstrndx = elfField(elf, 0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > elf.size()) return out;
  const uint64_t strtab = elfField(elf, shoff + shstrndx * shentsize + 0x18, 8);
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t name_off = strtab + elfField(elf, shoff + i * shentsize, 4);
    if (name_off >= elf.size()) continue;
    const std::string name(elf.c_str() + name_off, strnlen(elf.c_str() + name_off,
                                                           elf.size() - name_off));
    if (name.rfind(".text.", 0) == 0) out.push_back(name.substr(6));
  }
  return out;
}

Status checkCubin(const CompileRequest& req, const std::string& cubin) {
  constexpr unsigned kEmCuda = 190;
  if (cubin.size() < 64 || cubin.compare(0, 4, "\x7f" "ELF") != 0 || cubin[4] != 2)
    return Status::InvalidArgument(req.source_name + " is not a cubin (no 64-bit ELF header)");
  if (elfField(cubin, 18, 2) != kEmCuda)
    return Status::InvalidArgument(req.source_name + " is an ELF file for machine " +
                                   std::to_string(elfField(cubin, 18, 2)) +
                                   ", not a cubin (EM_CUDA, 190)");
  // The SM sits in e_flags bits 8-15 from ELF ABI version 8 on (CUDA 12.x), in bits 0-7 before.
  const uint64_t flags = elfField(cubin, 48, 4);
  const unsigned sm = static_cast<unsigned char>(cubin[8]) >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  std::smatch m;
  static const std::regex re("sm_([0-9]{2,3})[af]?");
  if (!std::regex_match(req.arch, m, re))
    return Status::InvalidArgument("arch '" + req.arch + "' is not an NVIDIA arch (sm_XX)");
  if (unsigned(std::stoi(m[1])) != sm)
    return Status::InvalidArgument(req.source_name + " was built for sm_" + std::to_string(sm) +
                                   ", not " + req.arch);
  return Status::Ok();
}

std::string sassOf(const std::string& cubin) {
  return sassDump(cubin, toolchain().ptxas.empty() ? "" : toolchain().ptxas.substr(
                                                              0, toolchain().ptxas.rfind('/')));
}

}  // namespace ktune::ir_detail
