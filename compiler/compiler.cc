#include "compiler/compiler.h"

#include <stdlib.h>

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>

#include "base/device.h"
#include "base/format.h"
#include "base/fs.h"
#include "compiler/compiler_util.h"

namespace ktune::compiler_embedded {
std::string_view embeddedSource(const char* name);  // generated from compiler/*.cuh (CMake)
}  // namespace ktune::compiler_embedded

namespace ktune {

Expected<unsigned> parseDumpName(const std::string& name) {
  if (name == "source") return unsigned(kDumpSource);
  if (name == "ptx") return unsigned(kDumpPtx);
  if (name == "sass") return unsigned(kDumpSass);
  if (name == "llvm") return unsigned(kDumpLlvm);
  if (name == "isa" || name == "amdgcn") return unsigned(kDumpIsa);
  if (name == "mlir") return unsigned(kDumpMlir);
  if (name == "all") return unsigned(kDumpAll);
  return Status::InvalidArgument("unknown dump '" + name +
                                 "' (expected source, ptx, sass, llvm, isa, mlir or all)");
}

const char* dumpName(Dump d) {
  switch (d) {
    case kDumpSource:
      return "source";
    case kDumpPtx:
      return "ptx";
    case kDumpSass:
      return "sass";
    case kDumpLlvm:
      return "llvm";
    case kDumpIsa:
      return "isa";
    case kDumpMlir:
      return "mlir";
    default:
      return "none";
  }
}

}  // namespace ktune

// ---- helpers shared by the compilers (compiler_util.h) and the arch dispatch -----------------

namespace ktune::compiler_detail {

// prelude.cuh with its parts (prelude_*.cuh, embedded beside it) expanded in place: one text,
// built once.
std::string_view preludeSource() {
  static const std::string text = expandIncludes(
      ktune::compiler_embedded::embeddedSource("prelude.cuh"), [](std::string_view name) {
        return ktune::compiler_embedded::embeddedSource(std::string(name).c_str());
      });
  return text;
}

std::vector<std::string> defineFlags(const CompileRequest& req) {
  std::vector<std::string> out;
  for (const auto& [k, v] : req.defines) out.push_back(v.empty() ? "-D" + k : "-D" + k + "=" + v);
  return out;
}

std::vector<std::string> requestFlags(const CompileRequest& req, std::vector<std::string> base) {
  for (auto& d : defineFlags(req)) base.push_back(std::move(d));
  base.insert(base.end(), req.options.begin(), req.options.end());
  return base;
}

CodeObject codeObjectFor(const CompileRequest& req, const char* format, std::string compiler,
                         std::string version, std::vector<std::string> options) {
  CodeObject co;
  co.format = format;
  co.arch = req.arch;
  co.entry = req.entry;
  co.compiler = std::move(compiler);
  co.compiler_version = std::move(version);
  co.options = std::move(options);
  return co;
}

std::string instantiatedSource(const CompileRequest& req) {
  std::string s = "// ktune: " + (req.source_name.empty() ? "kernel" : req.source_name) + " for " +
                  req.arch + ", entry " + req.entry + "\n";
  for (const auto& [k, v] : req.defines) s += "#define " + k + " " + v + "\n";
  s += req.source;
  return s;
}

std::vector<std::string> regexCaptures(const std::string& text, const std::regex& re, int group) {
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it)
    out.push_back((*it)[group].str());
  return out;
}

std::string joinOptions(const std::vector<std::string>& opts) {
  std::string s;
  for (const auto& o : opts) {
    if (!s.empty()) s += ' ';
    s += o;
  }
  return s;
}

Status compileError(const std::string& compiler, const CompileRequest& req, const std::string& log,
                    const std::vector<std::string>& opts) {
  return Status::CompileError(compiler + " failed to compile " +
                              (req.source_name.empty() ? std::string("kernel") : req.source_name) +
                              " (entry " + (req.entry.empty() ? "unnamed" : req.entry) +
                              ", arch " + req.arch +
                              ")\noptions: " + joinOptions(opts) + "\nlog:\n" + log);
}

static bool isIdent(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

Status checkArch(const std::string& arch) {
  if (arch.empty()) return Status::InvalidArgument("compile request has no arch (e.g. sm_90a, gfx942)");
  for (char c : arch)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':' && c != '+' &&
        c != '-')
      return Status::InvalidArgument("malformed arch '" + arch + "'");
  return Status::Ok();
}

Status checkRequest(const CompileRequest& req) {
  KTUNE_RETURN_IF_ERROR(checkArch(req.arch));
  if (req.entry.empty())
    return Status::InvalidArgument("compile request has no entry (kernel name)");
  // hiprtc only says HIPRTC_ERROR_INVALID_INPUT for this; NVRTC "compiles" it to an empty module.
  if (req.source.find_first_not_of(" \t\r\n") == std::string::npos)
    return Status::InvalidArgument("compile request for entry '" + req.entry + "' has an empty " +
                                   "source" + (req.source_name.empty() ? "" : " (" + req.source_name + ")"));
  for (const auto& [k, v] : req.defines) {
    if (!isIdent(k)) return Status::InvalidArgument("define name '" + k + "' is not an identifier");
    if (v.find('\n') != std::string::npos)
      return Status::InvalidArgument("define " + k + " has a newline in its value");
  }
  return Status::Ok();
}

bool isNameExpression(const std::string& entry) { return !isIdent(entry); }

static std::string noSpaces(const std::string& s) {
  std::string o;
  for (char c : s)
    if (c != ' ') o += c;
  return o;
}

// "_Z5scaleIDF16_..." / "_ZN2ns5scaleI..." -> "scale" / "ns::scale": the qualified name alone,
// for symbols the host demangler cannot read (GCC 12 knows no DF16_, i.e. _Float16).
static std::string mangledBaseName(const std::string& sym) {
  if (sym.rfind("_Z", 0) != 0) return sym;
  size_t i = 2;
  if (i < sym.size() && sym[i] == 'N') ++i;
  std::string out;
  while (i < sym.size() && std::isdigit(static_cast<unsigned char>(sym[i]))) {
    size_t len = 0;
    while (i < sym.size() && std::isdigit(static_cast<unsigned char>(sym[i])))
      len = len * 10 + static_cast<size_t>(sym[i++] - '0');
    if (len == 0 || i + len > sym.size()) break;
    out += (out.empty() ? "" : "::") + sym.substr(i, len);
    i += len;
  }
  return out.empty() ? sym : out;
}

// Demangled "ns::f<T, 8>(T const*, float*)" -> "ns::f<T,8>" (return type and parameters dropped).
static std::string demangledName(const std::string& sym) {
  int st = 0;
  char* d = abi::__cxa_demangle(sym.c_str(), nullptr, nullptr, &st);
  if (st != 0 || !d) return mangledBaseName(sym);
  std::string s = d;
  std::free(d);
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == ' ' && depth == 0) start = i + 1;  // skip "void " return type of templates
    if (c == '(' && depth == 0) return noSpaces(s.substr(start, i - start));
  }
  return noSpaces(s.substr(start));
}

static std::string baseName(const std::string& s) { return s.substr(0, s.find('<')); }

Expected<std::string> resolveEntry(const std::string& entry,
                                   const std::vector<std::string>& symbols) {
  for (const auto& s : symbols)
    if (s == entry) return s;
  const std::string want = noSpaces(entry);
  std::vector<std::string> same_base;
  std::string listing;
  for (const auto& s : symbols) {
    const std::string d = demangledName(s);
    if (d == want) return s;
    if (baseName(d) == baseName(want)) same_base.push_back(s);
    listing += "\n  " + s + " (" + d + ")";
  }
  if (same_base.size() == 1) return same_base[0];
  return Status::NotFound("kernel '" + entry + "' not found in the code object" +
                          (same_base.size() > 1 ? " (several instances match its name)" : "") +
                          "; kernels:" + (listing.empty() ? std::string(" none") : listing));
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Expected<TempDir> TempDir::create(const std::string& prefix) {
  const char* tmp = "/tmp";
  std::string tmpl = std::string(tmp) + "/" + prefix + "XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))  // mkdtemp creates the directory with mode 0700
    return Status::IoError("cannot create a temporary directory under " + std::string(tmp));
  TempDir d;
  d.path_ = buf.data();
  return d;
}

TempDir::~TempDir() {
  if (!path_.empty()) (void)removeTree(path_);
}

}  // namespace ktune::compiler_detail

namespace ktune {

#ifndef KTUNE_HAVE_NVRTC
Expected<std::unique_ptr<Compiler>> openNvrtcCompiler() {
  return Status::Unavailable("ktune was built without the NVRTC compiler (KTUNE_WITH_CUDA=OFF)");
}
#endif
#ifndef KTUNE_HAVE_HIPRTC
Expected<std::unique_ptr<Compiler>> openHiprtcCompiler() {
  return Status::Unavailable("ktune was built without the hiprtc compiler (KTUNE_WITH_HIP=OFF)");
}
#endif

Expected<std::unique_ptr<Compiler>> compilerForArch(const std::string& arch,
                                                    const std::string& clang) {
  const Arch a(arch);
  if (a.isNvidia()) {
    KTUNE_ASSIGN_OR_RETURN(auto c, openNvrtcCompiler());
    if (!c->supportsArch(arch))
      return Status::Unsupported("NVRTC " + c->version() + " does not support arch '" + arch +
                                 "' (supported: sm_XX as listed by nvrtcGetSupportedArchs)");
    return c;
  }
  if (a.isAmd()) {
    std::string why;
    auto h = openHiprtcCompiler();
    if (h.ok() && (*h)->supportsArch(arch)) return std::move(h).value();
    why = h.ok() ? "hiprtc " + (*h)->version() + " does not know " + arch : h.status().message();
    auto l = openLlvmAmdgpuCompiler(clang);
    if (l.ok() && (*l)->supportsArch(arch)) return std::move(l).value();
    // A compiler that is not installed is a missing component (kUnavailable, the CLI's exit 3);
    // one that is there but cannot target the arch is kUnsupported.
    const std::string msg = "no compiler for '" + arch + "': " + why + "; LLVM path: " +
                            (l.ok() ? "clang does not support " + arch : l.status().message());
    if (!l.ok() && l.status().code() == Code::kUnavailable) return Status::Unavailable(msg);
    return Status::Unsupported(msg);
  }
  return Status::Unsupported("unknown arch '" + arch +
                             "': expected sm_XX[a] (NVIDIA) or gfxNNN (AMD), e.g. sm_90a, gfx942");
}

}  // namespace ktune
