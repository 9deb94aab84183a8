#include "compiler/nvrtc/nvrtc_compiler.h"

#include "base/sha256.h"

#include <algorithm>
#include <chrono>
#include <regex>
#include <unordered_map>
#include <mutex>
#include <sstream>

#include "base/dylib.h"
#include "base/fs.h"
#include "base/subprocess.h"
#include "compiler/compiler_util.h"

#ifndef KTUNE_DEFAULT_CUDA_INCLUDE
#define KTUNE_DEFAULT_CUDA_INCLUDE "/usr/local/cuda/include"
#endif

namespace ktune {
namespace {

// Resource reports by cubin hash (see the NVRTC reuse note in compile()).
std::mutex& resourceMemoMutex() {
  static std::mutex mu;
  return mu;
}
std::unordered_map<std::string, ResourceUsage>& resourceMemo() {
  static auto* memo = new std::unordered_map<std::string, ResourceUsage>();
  return *memo;
}
void rememberResources(const std::string& cubin, const ResourceUsage& r) {
  std::string key = sha256Hex(cubin);
  std::lock_guard<std::mutex> l(resourceMemoMutex());
  resourceMemo()[key] = r;
}
}  // namespace

// Last resort when no ptxas report exists (NVRTC reused a program compiled by another process
// or earlier): read the cubin. The kernel's .text section's sh_info is its symbol index; the
// global .nv.info section holds EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE (0x11) records
// {u8 format, u8 attribute, u16 size, u32 symbol, u32 value}; static shared memory is the size of
// .nv.shared.<entry> less the driver's reservation (see below). Spill counts are not recoverable this way.
bool cubinResources(const std::string& elf, const std::string& entry, ResourceUsage* r) {
  auto rd = [&](uint64_t off, size_t n) -> uint64_t {
    uint64_t v = 0;
    if (off + n > elf.size()) return 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(elf[off + i])) << (8 * i);
    return v;
  };
  if (elf.size() < 64 || elf.compare(0, 4, "\x7f" "ELF") != 0 || elf[4] != 2) return false;
  const uint64_t shoff = rd(0x28, 8), shentsize = rd(0x3a, 2), shnum = rd(0x3c, 2),
                 shstrndx = rd(0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > elf.size()) return false;
  const uint64_t strtab = rd(shoff + shstrndx * shentsize + 0x18, 8);
  int64_t sym = -1;
  uint64_t info_off = 0, info_size = 0;
  int64_t shared = 0;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + i * shentsize;
    const uint64_t name_off = strtab + rd(h, 4);
    if (name_off >= elf.size()) continue;
    const std::string name(elf.c_str() + name_off);
    if (name == ".text." + entry) sym = static_cast<int64_t>(rd(h + 0x2c, 4));
    else if (name == ".nv.shared." + entry) shared = static_cast<int64_t>(rd(h + 0x20, 8));
    else if (name == ".nv.info") { info_off = rd(h + 0x18, 8); info_size = rd(h + 0x20, 8); }
  }
  if (sym < 0 || info_size == 0 || info_off + info_size > elf.size()) return false;
  bool found = false;
  for (uint64_t p = info_off; p + 4 <= info_off + info_size;) {
    const unsigned fmt = static_cast<unsigned char>(elf[p]);
    const unsigned attr = static_cast<unsigned char>(elf[p + 1]);
    if (fmt != 0x04) {  // no payload beyond the 4-byte header
      p += 4;
      continue;
    }
    const uint64_t size = rd(p + 2, 2);
    if (size == 8 && static_cast<int64_t>(rd(p + 4, 4)) == sym) {
      if (attr == 0x2f) {
        r->registers = static_cast<int>(rd(p + 8, 4));
        found = true;
      } else if (attr == 0x11) {
        r->stack_bytes = static_cast<int64_t>(rd(p + 8, 4));
      }
    }
    p += 4 + size;
  }
  // .nv.shared.<entry> also holds the 1 KiB per block the driver reserves on sm_80 and newer
  // (every NVIDIA arch ktune targets): 3072 B in the section for a kernel ptxas reports as "2048
  // bytes smem", 1088 for the driver's 64 (tests/gpu/analysis_gpu_test compares with the driver).
  constexpr int64_t kReservedSharedPerBlock = 1024;
  if (shared >= kReservedSharedPerBlock) shared -= kReservedSharedPerBlock;
  if (found && r->shared_bytes == 0) r->shared_bytes = shared;
  return found;
}

namespace {

bool rememberedResources(const std::string& cubin, ResourceUsage* r) {
  std::string key = sha256Hex(cubin);
  std::lock_guard<std::mutex> l(resourceMemoMutex());
  auto it = resourceMemo().find(key);
  if (it == resourceMemo().end()) return false;
  *r = it->second;
  return true;
}


using namespace compiler_detail;

// The stable NVRTC C ABI (nvrtc.h), declared here so no CUDA header is needed at build time.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct NvrtcApi {
  DynLib lib;
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*GetSupportedArchs)(int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char*) = nullptr;
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char*, const char**) = nullptr;
};

std::string parentDir(const std::string& p) {
  std::string s = p;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  auto i = s.rfind('/');
  return i == std::string::npos ? "." : s.substr(0, i == 0 ? 1 : i);
}

// Owns one nvrtcProgram.
class Program {
 public:
  Program(const NvrtcApi& api, nvrtcProgram p) : api_(api), p_(p) {}
  ~Program() {
    if (p_) api_.DestroyProgram(&p_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }
  std::string log() const {
    size_t n = 0;
    if (api_.GetProgramLogSize(p_, &n) != kNvrtcSuccess || n == 0) return "";
    std::string s(n, '\0');
    if (api_.GetProgramLog(p_, s.data()) != kNvrtcSuccess) return "";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }

 private:
  const NvrtcApi& api_;
  nvrtcProgram p_;
};

class NvrtcCompiler final : public Compiler {
 public:
  NvrtcCompiler(std::unique_ptr<NvrtcApi> api, std::string include)
      : api_(std::move(api)), cuda_include_(std::move(include)) {
    int major = 0, minor = 0;
    if (api_->Version(&major, &minor) == kNvrtcSuccess)
      version_ = std::to_string(major) + "." + std::to_string(minor);
    int n = 0;
    if (api_->GetNumSupportedArchs && api_->GetSupportedArchs &&
        api_->GetNumSupportedArchs(&n) == kNvrtcSuccess && n > 0) {
      archs_.resize(n);
      if (api_->GetSupportedArchs(archs_.data()) != kNvrtcSuccess) archs_.clear();
    }
  }

  std::string name() const override { return "nvrtc"; }
  std::string version() const override { return version_; }

  bool supportsArch(const std::string& arch) const override {
    int sm = smNumber(arch);
    if (sm <= 0) return false;
    if (archs_.empty()) return sm >= 50 && sm <= 120;  // old NVRTC without the query
    return std::find(archs_.begin(), archs_.end(), sm) != archs_.end();
  }

  Expected<CodeObject> compile(const CompileRequest& req) override {
    const auto t0 = std::chrono::steady_clock::now();
    KTUNE_RETURN_IF_ERROR(checkRequest(req));
    if (!supportsArch(req.arch))
      return Status::Unsupported("NVRTC " + version_ + " cannot target '" + req.arch +
                                 "' (expected sm_XX[a|f] with XX among " + archList() + ")");
    std::vector<std::string> opts = {"-arch=" + req.arch, "-std=c++17", "-default-device",
                                     "-I" + cuda_include_, "--ptxas-options=-v"};
    for (auto& d : defineFlags(req)) opts.push_back(d);
    for (auto& o : req.options) opts.push_back(o);

    CodeObject co;
    co.format = "cubin";
    co.arch = req.arch;
    co.entry = req.entry;
    co.compiler = name();
    co.compiler_version = version_;
    co.options = opts;
    std::string ptx;
    KTUNE_ASSIGN_OR_RETURN(auto prog, build(req, opts, &co.lowered_entry, &co.log));
    size_t n = 0;
    if (api_->GetCUBINSize(prog->get(), &n) != kNvrtcSuccess || n == 0)
      return Status::Internal("NVRTC produced no cubin for " + req.arch);
    co.binary.resize(n);
    if (api_->GetCUBIN(prog->get(), co.binary.data()) != kNvrtcSuccess)
      return Status::Internal("nvrtcGetCUBIN failed");
    // An extern "C" entry is taken on trust by build(); without this check a misspelt entry (or
    // an empty source) "compiles" and only fails at module load on the GPU, far from the cause.
    // Every kernel of a cubin has its own ".text.<symbol>" section.
    if (co.binary.find(".text." + co.lowered_entry + std::string(1, '\0')) == std::string::npos)
      return entryNotFound(req, co.log);
    if (req.dumps & kDumpPtx) ptx = getPtx(prog->get());
    prog.reset();
    if ((req.dumps & kDumpPtx) && ptx.empty()) {
      // Some NVRTC versions keep no PTX when asked for an sm_ target (they compile straight to
      // SASS); compile again for the virtual arch to show it.
      auto virt = opts;
      virt[0] = "-arch=compute_" + req.arch.substr(3);
      std::string unused_entry, unused_log;
      auto p2 = build(req, virt, &unused_entry, &unused_log);
      if (p2.ok()) ptx = getPtx((*p2)->get());
    }
    if (!parsePtxasReport(co.log, co.lowered_entry, &co.resources) &&
        !parsePtxasReport(co.log, "", &co.resources)) {
      // NVRTC 13 reuses the result of an identical earlier compile in this process and then
      // prints no ptxas report (seen on the H100 machine: the same GEMM config compiled for two
      // shapes reported 0 registers the second time). Identical programs give identical
      // cubins, so take the report remembered for this cubin.
      if (!rememberedResources(co.binary, &co.resources))
        cubinResources(co.binary, co.lowered_entry, &co.resources);
    } else {
      rememberResources(co.binary, co.resources);
    }
    co.resources.wave_size = 32;
    if (req.dumps & kDumpSource) co.dumps["source"] = instantiatedSource(req);
    if (req.dumps & kDumpPtx) co.dumps["ptx"] = ptx.empty() ? "PTX not available from NVRTC" : ptx;
    if (req.dumps & kDumpSass) co.dumps["sass"] = sass(co.binary);
    if (req.dumps & kDumpLlvm)
      co.dumps["llvm"] = "LLVM IR is not available from NVRTC (its LTO-IR is opaque NVVM bitcode)";
    if (req.dumps & kDumpIsa) co.dumps["isa"] = "AMDGCN ISA does not apply to NVIDIA targets";
    co.compile_ms = msSince(t0);
    return co;
  }

 private:
  static int smNumber(const std::string& arch) {
    static const std::regex re("sm_([0-9]{2,3})[af]?");
    std::smatch m;
    if (!std::regex_match(arch, m, re)) return -1;
    return std::stoi(m[1]);
  }
  std::string archList() const {
    std::string s;
    for (int a : archs_) s += (s.empty() ? "" : ",") + std::to_string(a);
    return s.empty() ? "50..120" : s;
  }
  std::string getPtx(nvrtcProgram p) const {
    size_t n = 0;
    if (api_->GetPTXSize(p, &n) != kNvrtcSuccess || n <= 1) return "";
    std::string s(n, '\0');
    if (api_->GetPTX(p, s.data()) != kNvrtcSuccess) return "";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }

  Expected<std::unique_ptr<Program>> build(const CompileRequest& req,
                                           const std::vector<std::string>& opts,
                                           std::string* lowered, std::string* log) const {
    const std::string prelude(preludeSource());
    const char* headers[] = {prelude.c_str()};
    const char* names[] = {"prelude.cuh"};
    nvrtcProgram raw = nullptr;
    const std::string src_name = req.source_name.empty() ? "kernel.cu" : req.source_name;
    nvrtcResult r =
        api_->CreateProgram(&raw, req.source.c_str(), src_name.c_str(), 1, headers, names);
    if (r != kNvrtcSuccess)
      return Status::Internal(std::string("nvrtcCreateProgram: ") + api_->GetErrorString(r));
    auto prog = std::make_unique<Program>(*api_, raw);
    const bool expr = isNameExpression(req.entry);
    if (expr && api_->AddNameExpression(raw, req.entry.c_str()) != kNvrtcSuccess)
      return Status::InvalidArgument("NVRTC rejected the name expression '" + req.entry + "'");
    std::vector<const char*> argv;
    for (auto& o : opts) argv.push_back(o.c_str());
    r = api_->CompileProgram(raw, static_cast<int>(argv.size()), argv.data());
    *log = prog->log();
    if (r != kNvrtcSuccess) return compileError("NVRTC " + version_, req, *log, opts);
    if (expr) {
      const char* low = nullptr;
      if (api_->GetLoweredName(raw, req.entry.c_str(), &low) != kNvrtcSuccess || !low)
        return compileError("NVRTC " + version_, req,
                            "no lowered name for name expression '" + req.entry + "'\n" + *log,
                            opts);
      *lowered = low;
    } else {
      *lowered = req.entry;
    }
    return prog;
  }

  // kNotFound naming the kernels ptxas did compile (from the -v log).
  static Status entryNotFound(const CompileRequest& req, const std::string& log) {
    static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
    std::string kernels;
    for (std::sregex_iterator it(log.begin(), log.end(), entry_re), end; it != end; ++it)
      kernels += (kernels.empty() ? "" : ", ") + (*it)[1].str();
    return Status::NotFound("kernel '" + req.entry + "' not found in " +
                            (req.source_name.empty() ? std::string("the source") : req.source_name) +
                            " compiled for " + req.arch + " (kernels: " +
                            (kernels.empty() ? std::string("none") : kernels) +
                            "); check --entry and that the kernel is extern \"C\" __global__");
  }

  std::string sass(const std::string& cubin) const {
    std::string tool = findProgram("nvdisasm");
    std::vector<std::string> argv;
    const std::string bin_dir = parentDir(cuda_include_) + "/bin";
    if (tool.empty() && pathExists(bin_dir + "/nvdisasm")) tool = bin_dir + "/nvdisasm";
    if (!tool.empty()) {
      argv = {tool, "-c"};
    } else {
      tool = findProgram("cuobjdump");
      if (tool.empty() && pathExists(bin_dir + "/cuobjdump")) tool = bin_dir + "/cuobjdump";
      if (tool.empty())
        return "nvdisasm not installed (nor cuobjdump; looked on PATH and in " + bin_dir +
               "): SASS unavailable";
      argv = {tool, "-sass"};
    }
    auto dir = TempDir::create("ktune-sass-");
    if (!dir.ok()) return "SASS unavailable: " + dir.status().message();
    const std::string path = dir->file("kernel.cubin");
    if (!writeFileAtomic(path, cubin).ok()) return "SASS unavailable: cannot write " + path;
    argv.push_back(path);
    auto r = runProcess(argv, "", 60000);
    if (!r.ok()) return "SASS unavailable: " + r.status().message();
    if (r->exit_code != 0) return "SASS unavailable: " + argv[0] + " failed:\n" + r->err;
    return r->out;
  }

  std::unique_ptr<NvrtcApi> api_;
  std::string cuda_include_;
  std::string version_ = "unknown";
  std::vector<int> archs_;
};

}  // namespace

bool parsePtxasReport(const std::string& log, const std::string& function, ResourceUsage* out) {
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex stack_re(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::string line, entry, props;
  bool found = false;
  ResourceUsage r = *out;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      if (found) break;  // the function we wanted is complete
      entry = m[1];
      continue;
    }
    if (std::regex_search(line, m, props_re)) {
      props = m[1];
      continue;
    }
    const bool ours = function.empty() ? !entry.empty() : entry == function;
    if (std::regex_search(line, m, stack_re) && ours && props == entry) {
      r.stack_bytes = std::stoll(m[1]);
      r.spill_store_bytes = std::stoll(m[2]);
      r.spill_load_bytes = std::stoll(m[3]);
      found = true;
    }
    if (std::regex_search(line, m, used_re) && ours) {
      r.registers = std::stoi(m[1]);
      std::smatch s;
      r.shared_bytes = std::regex_search(line, s, smem_re) ? std::stoll(s[1]) : 0;
      found = true;
    }
  }
  if (found) *out = r;
  return found;
}

Expected<std::unique_ptr<Compiler>> openNvrtcCompiler(const NvrtcConfig& config) {
  const std::string include =
      config.cuda_include.empty() ? std::string(KTUNE_DEFAULT_CUDA_INCLUDE) : config.cuda_include;
  std::vector<std::string> names = config.library_candidates;
  if (names.empty()) {
    const std::string root = parentDir(include);
    for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) names.push_back(n);
    for (const char* sub : {"/lib64/", "/lib/"})
      for (const char* n : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
        names.push_back(root + sub + n);
  }
  auto api = std::make_unique<NvrtcApi>();
  KTUNE_ASSIGN_OR_RETURN(api->lib, DynLib::open(names, "NVRTC"));
  const DynLib& l = api->lib;
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetErrorString, "nvrtcGetErrorString"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->Version, "nvrtcVersion"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->CreateProgram, "nvrtcCreateProgram"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->DestroyProgram, "nvrtcDestroyProgram"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->CompileProgram, "nvrtcCompileProgram"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetPTXSize, "nvrtcGetPTXSize"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetPTX, "nvrtcGetPTX"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetCUBINSize, "nvrtcGetCUBINSize"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetCUBIN, "nvrtcGetCUBIN"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetProgramLogSize, "nvrtcGetProgramLogSize"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetProgramLog, "nvrtcGetProgramLog"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->AddNameExpression, "nvrtcAddNameExpression"));
  KTUNE_RETURN_IF_ERROR(l.bind(api->GetLoweredName, "nvrtcGetLoweredName"));
  // Optional (NVRTC >= 11.2).
  (void)l.bind(api->GetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  (void)l.bind(api->GetSupportedArchs, "nvrtcGetSupportedArchs");
  if (!pathExists(include + "/cuda_fp16.h"))
    return Status::Unavailable("CUDA headers not found: " + include +
                               "/cuda_fp16.h is missing (NVRTC kernels include cuda_fp16.h/"
                               "cuda_bf16.h); pass NvrtcConfig::cuda_include");
  return std::unique_ptr<Compiler>(new NvrtcCompiler(std::move(api), include));
}

Expected<std::unique_ptr<Compiler>> openNvrtcCompiler() { return openNvrtcCompiler(NvrtcConfig{}); }

}  // namespace ktune
