// The IR front door's MLIR steps: a gpu.module lowered through mlir-opt to NVVM or ROCDL and
// translated to LLVM IR, with the module kept after every stage for the dump; and the MLIR view of
// LLVM IR (the C++ templates' "mlir" dump) through mlir-translate --import-llvm.
#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <sstream>

#include "base/subprocess.h"
#include "compiler/compiler_util.h"
#include "compiler/ir/ir_util.h"

namespace ktune::ir_detail {

namespace {

// The default pipeline: lower the kernel dialects inside each gpu.module to the LLVM dialect with
// the target's intrinsics. 64-bit indices match pointer arithmetic on both vendors.
std::string defaultPipeline(const std::string& arch) {
  const std::string to_target =
      isNvidiaArch(arch)
          ? "convert-gpu-to-nvvm{index-bitwidth=64}"
          : "convert-gpu-to-rocdl{chipset=" + arch.substr(0, arch.find(':')) + " index-bitwidth=64}";
  return "builtin.module(gpu.module(lower-affine,convert-vector-to-scf,convert-scf-to-cf,"
         "convert-vector-to-llvm," +
         to_target + ",canonicalize,cse,reconcile-unrealized-casts))";
}

// "// -----// IR Dump After ConvertGpuOpsToNVVMOps (convert-gpu-to-nvvm) //----- //" -> the
// pass argument ("convert-gpu-to-nvvm"), for the stage list.
std::vector<std::string> stageNames(const std::string& dumps) {
  static const std::regex re(R"(IR Dump After \S+ \(([^)]+)\))");
  return compiler_detail::regexCaptures(dumps, re);
}

// The body of the gpu.module holding `entry` (any when empty) as a top-level module, from
// mlir-opt's printed form (nested ops indented two spaces per level, the closing brace alone on
// a line at the op's indentation). The input as is when it has no gpu.module (already lowered).
Expected<std::string> extractGpuModule(const std::string& printed, const std::string& entry) {
  std::istringstream in(printed);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::vector<std::string> found;
  std::string chosen;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t indent = lines[i].find_first_not_of(' ');
    if (indent == std::string::npos || lines[i].compare(indent, 12, "gpu.module @") != 0) continue;
    const std::string close = std::string(indent, ' ') + "}";
    std::string body = "module {\n";
    size_t j = i + 1;
    for (; j < lines.size() && lines[j] != close; ++j) body += lines[j] + "\n";
    body += "}\n";
    found.push_back(lines[i].substr(indent + 11, lines[i].find_first_of(" {", indent + 12) -
                                                     indent - 11));
    if (entry.empty() || body.find("llvm.func @" + entry + "(") != std::string::npos)
      if (chosen.empty()) chosen = body;
    i = j;
  }
  if (found.empty()) return printed;
  if (chosen.empty()) {
    static const std::regex kernel_re(R"(llvm\.func @([A-Za-z0-9_$.]+)\([^\n]*gpu\.kernel)");
    std::string kernels;
    for (std::sregex_iterator it(printed.begin(), printed.end(), kernel_re), end; it != end; ++it)
      kernels += (kernels.empty() ? "" : ", ") + (*it)[1].str();
    return Status::NotFound("no gpu.module defines kernel '" + entry + "' (kernels: " +
                            (kernels.empty() ? std::string("none") : kernels) + ")");
  }
  if (entry.empty() && found.size() > 1)
    return Status::InvalidArgument("the module has " + std::to_string(found.size()) +
                                   " gpu.modules: name the kernel to compile (entry)");
  return chosen;
}

}  // namespace

Expected<MlirLowering> lowerMlir(const CompileRequest& req) {
  const Toolchain& tc = toolchain();
  KTUNE_ASSIGN_OR_RETURN(std::string opt, need(tc.mlir_opt, "mlir-opt-19", "mlir-19-tools"));
  KTUNE_ASSIGN_OR_RETURN(std::string translate,
                         need(tc.mlir_translate, "mlir-translate-19", "mlir-19-tools"));
  // One thread: a module holds one or a few gpu.modules, and MLIR's thread pool would start a
  // thread per core for nothing (ktune compiles configs in parallel already).
  std::vector<std::string> argv = {opt, "--mlir-disable-threading"};
  std::string pipeline = "--pass-pipeline=" + defaultPipeline(req.arch);
  bool own = false;
  for (const auto& o : req.options) {
    argv.push_back(o);
    if (o.find("pass-pipeline") != std::string::npos) {
      pipeline = o;  // the caller's own
      own = true;
    }
  }
  if (!own) argv.push_back(pipeline);
  const bool stages = req.dumps & kDumpMlir;
  if (stages) argv.push_back("--mlir-print-ir-after-all");
  argv.push_back("-");
  // mlir-translate loads while mlir-opt runs (a failed early start: it runs after, as usual).
  const std::vector<std::string> tr_argv = {translate, "--mlir-to-llvmir", "-o", "-"};
  std::vector<std::string> early_argv = tr_argv;
  early_argv.push_back("{input}");
  auto early = EarlyTool::start(early_argv);
  KTUNE_ASSIGN_OR_RETURN(auto r, runProcess(argv, req.source, 300000));
  if (r.timed_out || r.signaled || r.exit_code != 0) {
    // With the per-pass dumps on, stderr ends with the diagnostics; show the tail.
    const std::string log = r.err.size() > 20000 ? r.err.substr(r.err.size() - 20000) : r.err;
    return compiler_detail::compileError("mlir-opt", req, log,
                                         std::vector<std::string>(argv.begin() + 1, argv.end()));
  }
  MlirLowering out;
  KTUNE_ASSIGN_OR_RETURN(std::string module, extractGpuModule(r.out, req.entry));
  std::vector<std::string> stdin_argv = tr_argv;
  stdin_argv.push_back("-");
  KTUNE_ASSIGN_OR_RETURN(out.llvm_ir, runToolOrEarly(early.ok() ? early->get() : nullptr,
                                                     stdin_argv, module, req));
  if (stages) {
    std::string list = "input";
    for (const auto& s : stageNames(r.err)) list += ", " + s;
    out.stages = "// ktune: MLIR lowering for " + req.arch + ", stages: " + list +
                 ", gpu.module extracted\n// " + pipeline +
                 "\n\n// -----// Input //----- //\n" + req.source + "\n" + r.err +
                 "\n// -----// gpu.module extracted for mlir-translate --mlir-to-llvmir //----- //\n" +
                 module;
  }
  return out;
}

namespace {

// Rewrites `<ty> asm [flags] "code", "constraints"(` inside call instructions into a call of a
// declared vararg function `@ktune.asm.N`, which mlir-translate can import. Returns the
// declarations to append; *legend gets one comment line per rewritten asm.
std::string rewriteInlineAsm(std::string* ir, std::string* legend) {
  static const std::regex re(
      R"re( asm ((?:sideeffect |alignstack |inteldialect |unwind )*)"([^"]*)", "([^"]*)"\()re");
  std::map<std::string, int> ids;
  std::string out, decls;
  size_t last = 0;
  const std::string& s = *ir;
  for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it) {
    const size_t at = size_t(it->position(0));
    // The return type ends right before " asm": a {struct}, a <vector> or one word.
    size_t ty_start = at;
    const char close = at > 0 ? s[at - 1] : ' ';
    if (close == '}' || close == '>') {
      const char open = close == '}' ? '{' : '<';
      int depth = 0;
      for (size_t p = at; p-- > 0;) {
        if (s[p] == close) ++depth;
        if (s[p] == open && --depth == 0) {
          ty_start = p;
          break;
        }
      }
    } else {
      ty_start = s.rfind(' ', at - 1) + 1;
    }
    const std::string type = s.substr(ty_start, at - ty_start);
    const std::string key = type + "|" + (*it)[1].str() + (*it)[2].str() + "|" + (*it)[3].str();
    auto [pos, fresh] = ids.emplace(key, int(ids.size()));
    const std::string name = "@ktune.asm." + std::to_string(pos->second);
    if (fresh) {
      decls += "declare " + type + " " + name + "(...)\n";
      *legend += "//   " + name.substr(1) + " = asm " + (*it)[1].str() + "\"" + (*it)[2].str() +
                 "\", \"" + (*it)[3].str() + "\"\n";
    }
    out += s.substr(last, at - last) + " (...) " + name + "(";
    last = at + size_t(it->length(0));
  }
  out += s.substr(last);
  *ir = std::move(out);
  return decls;
}

// Renames every use of intrinsic `name` ("llvm.amdgcn.workitem.id.x") to "ktune.intr.<name>", a
// plain function: the exact name only, not longer names it is a prefix of.
void renameIntrinsic(std::string* ir, const std::string& name) {
  const std::string from = "@" + name, to = "@ktune.intr." + name;
  std::string out;
  size_t last = 0;
  for (size_t p = ir->find(from); p != std::string::npos; p = ir->find(from, p + 1)) {
    const size_t after = p + from.size();
    if (after < ir->size() && (std::isalnum(static_cast<unsigned char>((*ir)[after])) ||
                               (*ir)[after] == '.' || (*ir)[after] == '_'))
      continue;
    out += ir->substr(last, p - last) + to;
    last = after;
  }
  out += ir->substr(last);
  *ir = std::move(out);
}

// AMDGPU intrinsics: mlir-translate 19 imports none of them (the ROCDL dialect has no importer).
void renameAmdgcnIntrinsics(std::string* ir, std::vector<std::string>* renamed) {
  static const std::regex re(R"(@llvm\.amdgcn\.[A-Za-z0-9_.]+)");
  std::vector<std::string> names;
  for (std::sregex_iterator it(ir->begin(), ir->end(), re), end; it != end; ++it)
    if (std::find(names.begin(), names.end(), it->str().substr(1)) == names.end())
      names.push_back(it->str().substr(1));
  for (const auto& n : names) renameIntrinsic(ir, n);
  renamed->insert(renamed->end(), names.begin(), names.end());
}

}  // namespace

Expected<std::string> importLlvmIr(const std::string& mlir_translate, const std::string& llvm_ir,
                                   int timeout_ms) {
  const std::string tool = mlir_translate.empty() ? toolchain().mlir_translate : mlir_translate;
  if (tool.empty())
    return Status::Unavailable("mlir-translate not found: install mlir-19-tools for the MLIR view");
  std::string ir = llvm_ir, legend;
  std::vector<std::string> renamed;
  renameAmdgcnIntrinsics(&ir, &renamed);
  ir += rewriteInlineAsm(&ir, &legend);
  // immarg is only valid on intrinsics; the renamed declarations are plain functions.
  for (size_t p = ir.find(" immarg"); p != std::string::npos; p = ir.find(" immarg", p))
    ir.erase(p, 7);
  static const std::regex unhandled(R"(unhandled intrinsic:[^\n]*@(llvm\.[A-Za-z0-9_.]+))");
  constexpr int kMaxTries = 16;
  for (int attempt = 0; attempt < kMaxTries; ++attempt) {
    KTUNE_ASSIGN_OR_RETURN(auto r, runProcess({tool, "--import-llvm", "-"}, ir, timeout_ms));
    if (r.timed_out) return Status::Timeout("mlir-translate --import-llvm timed out");
    if (!r.signaled && r.exit_code == 0) {
      std::string head = "// ktune: LLVM IR imported with mlir-translate --import-llvm.\n";
      if (!renamed.empty() || !legend.empty())
        head += "// mlir-translate 19 cannot import these, so they are calls to declared "
                "functions:\n//   @ktune.intr.<name> stands for the LLVM intrinsic <name> (" +
                std::to_string(renamed.size()) + " of them)\n" + legend;
      return head + r.out;
    }
    std::smatch m;
    if (!std::regex_search(r.err, m, unhandled)) {
      // Keep the errors, not mlir-translate's warnings about data layout tokens.
      std::string errors;
      std::istringstream in(r.err);
      for (std::string l; std::getline(in, l);)
        if (l.find("warning: unhandled data layout") == std::string::npos) errors += l + "\n";
      return Status::CompileError("mlir-translate --import-llvm failed:\n" + errors);
    }
    renameIntrinsic(&ir, m[1].str());
    renamed.push_back(m[1].str());
  }
  return Status::CompileError("mlir-translate --import-llvm: more than " +
                              std::to_string(kMaxTries) + " intrinsics it cannot import");
}

}  // namespace ktune::ir_detail
