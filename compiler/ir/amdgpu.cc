// The IR front door's AMD steps: LLVM IR -> AMDGCN assembly (llc), assembly -> code object
// (llvm-mc, ld.lld -shared), and the checks of a prebuilt hsaco. The assembly is kept: it is the
// ISA view, and its .amdgpu_metadata block gives the resources without another tool.
#include <cstdlib>
#include <regex>

#include "base/fs.h"
#include "compiler/analysis/amd_metadata.h"
#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"

namespace ktune::ir_detail {

using compiler_detail::TempDir;

namespace {
constexpr const char* kTripleFlag = "-mtriple=amdgcn-amd-amdhsa";
constexpr const char* kMcTripleFlag = "-triple=amdgcn-amd-amdhsa";

// "gfx942:sramecc+:xnack-" -> {"-mcpu=gfx942", "-mattr=+sramecc,-xnack"}.
std::vector<std::string> cpuFlags(const std::string& arch) {
  std::vector<std::string> out = {"-mcpu=" + arch.substr(0, arch.find(':'))};
  std::string attrs;
  for (size_t p = arch.find(':'); p != std::string::npos;) {
    const size_t next = arch.find(':', p + 1);
    std::string f = arch.substr(p + 1, next == std::string::npos ? std::string::npos : next - p - 1);
    if (!f.empty() && (f.back() == '+' || f.back() == '-')) {
      if (!attrs.empty()) attrs.push_back(',');
      attrs.push_back(f.back());
      attrs.append(f, 0, f.size() - 1);
    }
    p = next;
  }
  if (!attrs.empty()) out.push_back("-mattr=" + attrs);
  return out;
}

// Functions the module declares but does not define, other than LLVM intrinsics: on AMD they
// would come from the ROCm device libraries (ockl, ocml), which ktune does not link.
std::vector<std::string> externalFunctions(const std::string& ir) {
  static const std::regex re(R"(\ndeclare [^@\n]*@("?)([A-Za-z0-9_.$]+)\1\()");
  std::vector<std::string> out;
  const std::string text = "\n" + ir;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    const std::string name = (*it)[2].str();
    if (name.rfind("llvm.", 0) != 0) out.push_back(name);
  }
  return out;
}

// "gfx942" -> 9402, "gfx90a" -> 9010, "gfx1100" -> 11000: __oclc_ISA_version's encoding.
int isaVersion(const std::string& arch) {
  const std::string g = arch.substr(3, arch.find(':') - 3);
  if (g.size() < 3) return 0;
  const int major = std::atoi(g.substr(0, g.size() - 2).c_str());
  const int minor = std::stoi(g.substr(g.size() - 2, 1), nullptr, 16);
  const int step = std::stoi(g.substr(g.size() - 1), nullptr, 16);
  return major * 1000 + minor * 100 + step;
}

// The device libraries' configuration constants (what clang takes from oclc_*.bc), for IEEE
// math without fast-math shortcuts, wave64 and code object v5.
std::string oclcControls(const std::string& arch) {
  std::string s;
  auto def = [&](const char* name, const char* type, int value) {
    s += std::string("@") + name + " = linkonce_odr hidden local_unnamed_addr addrspace(4) constant " +
         type + " " + std::to_string(value) + "\n";
  };
  def("__oclc_finite_only_opt", "i8", 0);
  def("__oclc_unsafe_math_opt", "i8", 0);
  def("__oclc_daz_opt", "i8", 0);
  def("__oclc_correctly_rounded_sqrt32", "i8", 1);
  def("__oclc_wavefrontsize64", "i8", isaVersion(arch) < 10000 ? 1 : 0);
  def("__oclc_ISA_version", "i32", isaVersion(arch));
  def("__oclc_ABI_version", "i32", 500);
  return s;
}

// Links the ocml/ockl functions the module calls (*linked = true); fails naming any other
// undefined function.
Expected<std::string> linkDeviceLibs(const CompileRequest& req, const std::string& ir,
                                     bool* linked) {
  const auto ext = externalFunctions(ir);
  if (ext.empty()) return ir;
  *linked = true;
  const Toolchain& tc = toolchain();
  std::string others;
  for (const auto& n : ext)
    if (n.rfind("__ocml_", 0) != 0 && n.rfind("__ockl_", 0) != 0)
      others += (others.empty() ? "" : ", ") + n;
  if (!others.empty() || tc.amd_bitcode.empty())
    return compiler_detail::compileError(
        "llc", req,
        "the module calls functions it does not define (" +
            (others.empty() ? ext[0] + (tc.amd_bitcode.empty()
                                            ? " from the ROCm device libraries: install "
                                              "rocm-device-libs"
                                            : "")
                            : others) +
            ")",
        {});
  KTUNE_ASSIGN_OR_RETURN(std::string link, need(tc.llvm_link, "llvm-link-19", "llvm-19"));
  KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-ir-"));
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("in.ll"), ir));
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("oclc.ll"), oclcControls(req.arch)));
  return runTool({link, "-S", "--internalize", "--only-needed", dir.file("in.ll"),
                  tc.amd_bitcode + "/ocml.bc", tc.amd_bitcode + "/ockl.bc", dir.file("oclc.ll"),
                  "-o", "-"},
                 "", req);
}
}  // namespace

std::vector<std::string> amdgcnLlcArgv(const CompileRequest& req, const std::string& input) {
  std::vector<std::string> argv = {toolchain().llc, "-O3", kTripleFlag};
  for (auto& f : cpuFlags(req.arch)) argv.push_back(f);
  for (const auto& o : req.options) argv.push_back(o);
  argv.insert(argv.end(), {"-o", "-", input});
  return argv;
}

Expected<std::string> llvmToAmdgcn(const CompileRequest& req, const std::string& ir_in,
                                   std::string* chain, EarlyTool* early_llc) {
  bool linked = false;
  KTUNE_ASSIGN_OR_RETURN(std::string ir, linkDeviceLibs(req, ir_in, &linked));
  if (linked) {  // inline the library calls, as clang does
    KTUNE_ASSIGN_OR_RETURN(ir, optimize(req, ir));
    *chain += "llvm-link+opt+";
  }
  KTUNE_RETURN_IF_ERROR(need(toolchain().llc, "llc-19", "llvm-19").status());
  return runToolOrEarly(early_llc, amdgcnLlcArgv(req, "-"), ir, req);
}

Status amdgcnToHsaco(const CompileRequest& req, const std::string& isa, CodeObject* co) {
  const Toolchain& tc = toolchain();
  KTUNE_ASSIGN_OR_RETURN(std::string mc, need(tc.llvm_mc, "llvm-mc-19", "llvm-19"));
  KTUNE_ASSIGN_OR_RETURN(std::string lld, need(tc.lld, "ld.lld-19", "lld-19"));
  KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-ir-"));
  std::vector<std::string> argv = {mc, kMcTripleFlag};
  for (auto& f : cpuFlags(req.arch)) argv.push_back(f);
  if (req.language == Language::kAmdgcnAsm)
    for (const auto& o : req.options) argv.push_back(o);
  argv.insert(argv.end(), {"-filetype=obj", "-o", dir.file("module.o"), "-"});
  KTUNE_ASSIGN_OR_RETURN(std::string mc_out, runTool(argv, isa, req));
  KTUNE_ASSIGN_OR_RETURN(std::string ld_out, runTool({lld, "-shared", "--build-id=none",
                                                      dir.file("module.o"), "-o",
                                                      dir.file("module.hsaco")},
                                                     "", req));
  co->options.assign(argv.begin() + 1, argv.end());
  KTUNE_ASSIGN_OR_RETURN(co->binary, readFile(dir.file("module.hsaco")));
  co->log += mc_out + ld_out;
  return Status::Ok();
}

Status checkHsaco(const CompileRequest& req, const std::string& hsaco, std::string* metadata,
                  std::string* isa) {
  constexpr unsigned kEmAmdgpu = 224;
  if (hsaco.size() < 64 || hsaco.compare(0, 4, "\x7f" "ELF") != 0 || hsaco[4] != 2)
    return Status::InvalidArgument(req.source_name + " is not an AMD code object (no 64-bit ELF)");
  const unsigned machine = static_cast<unsigned char>(hsaco[18]) |
                           (static_cast<unsigned char>(hsaco[19]) << 8);
  if (machine != kEmAmdgpu)
    return Status::InvalidArgument(req.source_name + " is an ELF file for machine " +
                                   std::to_string(machine) + ", not EM_AMDGPU (224)");
  const Toolchain& tc = toolchain();
  KTUNE_ASSIGN_OR_RETURN(std::string readelf, need(tc.readelf, "llvm-readelf-19", "llvm-19"));
  KTUNE_ASSIGN_OR_RETURN(auto dir, TempDir::create("ktune-ir-"));
  KTUNE_RETURN_IF_ERROR(writeFileAtomic(dir.file("module.hsaco"), hsaco));
  KTUNE_ASSIGN_OR_RETURN(*metadata, runTool({readelf, "--notes", dir.file("module.hsaco")}, "", req));
  static const std::regex target_re(R"(amdhsa\.target:\s+'?[a-z0-9-]*--(gfx[0-9a-f]+))");
  std::smatch m;
  if (!std::regex_search(*metadata, m, target_re))
    return Status::InvalidArgument(req.source_name +
                                   " has no amdhsa.target in its metadata note (not an HSA code "
                                   "object v3+)");
  const std::string base = req.arch.substr(0, req.arch.find(':'));
  if (m[1].str() != base)
    return Status::InvalidArgument(req.source_name + " was built for " + m[1].str() + ", not " +
                                   base);
  if (isa && !tc.objdump.empty()) {
    auto d = runTool({tc.objdump, "-d", "--mcpu=" + base, dir.file("module.hsaco")}, "", req);
    *isa = d.ok() ? *d : "disassembly unavailable: " + d.status().message();
  }
  return Status::Ok();
}

std::vector<std::string> amdKernels(const std::string& metadata) {
  std::vector<std::string> out;
  for (const auto& k : parseAmdgpuMetadataYaml(metadata)) out.push_back(k.name);
  return out;
}

void amdKernelResources(const std::string& metadata, const std::string& kernel, ResourceUsage* r) {
  const auto kernels = parseAmdgpuMetadataYaml(metadata);
  if (const AmdKernelMeta* k = findAmdKernel(kernels, kernel)) *r = amdResources(*k);
}

}  // namespace ktune::ir_detail
