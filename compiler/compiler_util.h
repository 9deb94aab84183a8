// Internal helpers shared by the NVRTC, hiprtc and clang compilers. Not part of the public API.
#pragma once

#include <chrono>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/compiler.h"

namespace ktune::compiler_detail {

// The kernel prelude every source includes as "prelude.cuh" (embedded at build time).
std::string_view preludeSource();
// Source as handed to the compiler, with the defines spelled out first (for kDumpSource).
std::string instantiatedSource(const CompileRequest& req);
// "-DKEY=VAL" (or "-DKEY" when VAL is empty) for each define.
std::vector<std::string> defineFlags(const CompileRequest& req);
// `base` followed by the request's defines (defineFlags) and its own options: a compiler's flags.
std::vector<std::string> requestFlags(const CompileRequest& req, std::vector<std::string> base);
// An empty code object of `format` that names what it was compiled from and with: the request's
// arch and entry, the compiler's name and version, the flags used.
CodeObject codeObjectFor(const CompileRequest& req, const char* format, std::string compiler,
                         std::string version, std::vector<std::string> options = {});
// Options joined with spaces, for messages.
std::string joinOptions(const std::vector<std::string>& opts);
// Capture group `group` of every match of `re` in `text`, in order (kernel, pass and symbol names
// scraped from compiler output).
std::vector<std::string> regexCaptures(const std::string& text, const std::regex& re,
                                       int group = 1);
// kCompileError with the compiler log and the exact options.
Status compileError(const std::string& compiler, const CompileRequest& req, const std::string& log,
                    const std::vector<std::string>& opts);
// Validates a define name / arch string so nothing odd reaches a command line.
Status checkRequest(const CompileRequest& req);
// The arch part of checkRequest: non-empty, letters, digits and _ : + - only.
Status checkArch(const std::string& arch);
// True if entry is a C++ name expression (template instance or qualified name), not a plain
// extern "C" identifier.
bool isNameExpression(const std::string& entry);
// Picks the kernel symbol (mangled) for `entry` among `symbols`: an exact symbol match, else the
// one whose demangled name (without parameters, spaces ignored) equals the expression, else the
// only kernel with the same template name. Used where the compiler cannot lower a name
// expression itself (clang; hiprtc 5.x, which does not see through typedefs such as
// ktune::half_t). kNotFound listing the kernels when nothing matches or several do.
Expected<std::string> resolveEntry(const std::string& entry,
                                   const std::vector<std::string>& symbols);
double msSince(std::chrono::steady_clock::time_point t0);

// A private (0700) temporary directory removed with everything in it on destruction.
class TempDir {
 public:
  static Expected<TempDir> create(const std::string& prefix);
  TempDir() = default;
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace ktune::compiler_detail
