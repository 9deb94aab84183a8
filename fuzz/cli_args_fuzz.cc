// Fuzzes the CLI argument parser (tools/args.h) with the flag specs of `ktune compile` and
// `ktune cache`, then runs ktune::cli::dispatch on the same argv for the subcommands that touch
// neither a GPU nor a compiler (version, help, cache ..., db ... except import/export -o, and
// compile/explain/info argument errors), against a throwaway KTUNE_CACHE_DIR holding two entries.
//
// Input: argv words separated by NUL bytes. Properties: parseArgs never crashes; on success every
// value belongs to a flag of the spec and a non-repeatable flag has one value; dispatch returns a
// documented exit code (0-4) and never crashes, and no command creates or changes a file anywhere
// in the scratch tree outside the cache directory. The two entries are in the store the CLI reads
// (populate() proves it with `cache ls --json`), so show/dump/rm/diff seeds reach real entries.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/fs.h"
#include "compiler/store/store.h"
#include "fuzz_util.h"
#include "templates/catalog.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace {
constexpr const char* kTarget = "cli_args_fuzz";
using ktune::cli::FlagSpec;

// Mirrors tools/cmd_compile.cc and tools/cmd_cache.cc (kept in sync by hand; a drift only makes
// this half of the fuzzer less deep, dispatch below always uses the real specs).
const std::vector<FlagSpec>& compileSpec() {
  static const std::vector<FlagSpec> k = {{"--arch", true},   {"--define", true, true, "-D"},
                                          {"--entry", true},  {"--dump", true, true},
                                          {"--option", true, true}, {"--resources"},
                                          {"--report"},       {"--no-cache"},
                                          {"--json"}};
  return k;
}
const std::vector<FlagSpec>& cacheSpec() {
  static const std::vector<FlagSpec> k = {{"--json"}, {"--what", true}, {"--yes"}};
  return k;
}

void checkParse(const std::vector<std::string>& argv, const std::vector<FlagSpec>& spec) {
  auto r = ktune::cli::parseArgs(argv, spec);
  if (!r.ok()) {
    if (r.status().code() != ktune::Code::kInvalidArgument || r.status().message().empty())
      ktune::fuzz::die(kTarget, "parseArgs error without kInvalidArgument + message");
    return;
  }
  if (r->positional.size() > argv.size()) ktune::fuzz::die(kTarget, "more positionals than words");
  for (const auto& [flag, values] : r->values) {
    const FlagSpec* f = nullptr;
    for (const auto& s : spec) {
      if (s.name == flag) f = &s;
    }
    if (!f) ktune::fuzz::die(kTarget, "value for a flag not in the spec: " + flag);
    if (!f->repeatable && values.size() != 1)
      ktune::fuzz::die(kTarget, "non-repeatable flag with several values: " + flag);
    (void)r->get(flag);
    (void)r->all(flag);
  }
  for (const auto& a : argv) (void)ktune::cli::parseIntFlag("--n", a, 1, 1 << 20);
}

std::string cacheDir() { return ktune::joinPath(ktune::fuzz::scratchDir("clifuzz"), "cache"); }

// Runs dispatch with stdout sent to `out` (when given) or /dev/null, stderr to /dev/null (the
// fuzzer would drown in usage text).
int quietDispatch(const std::vector<std::string>& args, std::string* out = nullptr) {
  std::fflush(stdout);
  std::fflush(stderr);
  int saved_out = ::dup(1), saved_err = ::dup(2);
  int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  const std::string capture = ktune::joinPath(ktune::fuzz::scratchDir("clifuzz"), "stdout.txt");
  int sink = out ? ::open(capture.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
  ::dup2(sink >= 0 ? sink : null, 1);
  ::dup2(null, 2);
  ::close(null);
  int rc = ktune::cli::dispatch(args);
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(saved_out);
  ::close(saved_err);
  if (sink >= 0) {
    ::close(sink);
    auto text = ktune::readFile(capture);
    *out = text.ok() ? *text : "";
    (void)ktune::removeFile(capture);
  }
  return rc;
}

const char* const kEntries[] = {"a1", "a2"};  // key prefixes of the two entries
std::string entryKey(const char* prefix) { return std::string(prefix) + std::string(62, 'b'); }

// Two entries in the store the CLI reads (KTUNE_CACHE_DIR itself: the store keeps its objects/
// under it), so show/dump/rm/diff/verify reach real entries. Re-made whenever an input removed
// them, and proven each time through the CLI: `cache ls --json` must list both.
void populate() {
  auto store = ktune::CodeObjectStore::open(cacheDir());
  if (!store.ok()) ktune::fuzz::die(kTarget, "scratch store: " + store.status().toString());
  auto l = (*store)->list();
  if (l.ok() && l->size() == 2) return;
  for (const char* k : kEntries) {
    ktune::CodeObject o;
    o.binary = std::string("sim-binary-") + k;
    o.format = "sim";
    o.arch = "gfx90a";
    o.entry = o.lowered_entry = "kern";
    o.compiler = "hiprtc";
    o.resources.vgpr = 64;
    o.resources.wave_size = 64;
    o.dumps["isa"] = "v_mfma_f32_32x32x8bf16_1k a[0:15], v[0:1], v[2:3], a[0:15]\ns_endpgm\n";
    if (!(*store)->put(entryKey(k), o).ok()) ktune::fuzz::die(kTarget, "cannot populate the store");
  }
  std::string ls;
  const int rc = quietDispatch({"cache", "ls", "--json"}, &ls);
  for (const char* k : kEntries) {
    if (rc != 0 || ls.find("\"" + entryKey(k) + "\"") == std::string::npos)
      ktune::fuzz::die(kTarget, "`cache ls --json` does not list the populated entry " +
                                    entryKey(k) + " (exit " + std::to_string(rc) + "): " + ls);
  }
}

// Every path under the scratch directory outside the cache directory, with its size: a command
// that writes anywhere in that tree (however deep) changes this.
std::map<std::string, std::uintmax_t> outsideCache() {
  namespace fs = std::filesystem;
  std::map<std::string, std::uintmax_t> out;
  const fs::path root = ktune::fuzz::scratchDir("clifuzz"), cache = cacheDir();
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path() == cache) {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code size_ec;
    const auto size = it->is_regular_file(size_ec) ? it->file_size(size_ec) : 0;
    out[it->path().lexically_relative(root).string()] = size;
  }
  if (ec) ktune::fuzz::die(kTarget, "cannot walk the scratch directory: " + ec.message());
  return out;
}

bool isKnownTemplateOrPath(const std::string& what) {
  return what.find('/') != std::string::npos || what.find('.') != std::string::npos ||
         ktune::templates::findTemplate(what).ok();
}

// True when dispatch() can run `args` without compiling, tuning or opening a GPU driver.
bool safeToDispatch(const std::vector<std::string>& args) {
  if (args.empty()) return true;
  const std::string& cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "tune") return false;
  if (cmd == "db") {
    // `db import FILE` reads any file (a FIFO or /dev/zero would hang the fuzzer) and
    // `db export -o FILE` writes where the user says: both are the user's explicit paths.
    for (const auto& a : rest) {
      if (a == "import" || a.rfind("-o", 0) == 0 || a.rfind("--o", 0) == 0) return false;
    }
  }
  if (cmd == "info") return !ktune::cli::parseArgs(rest, {{"--json"}}).ok();
  if (cmd == "compile" || cmd == "explain") {
    auto p = ktune::cli::parseArgs(rest, compileSpec());
    if (!p.ok() || p->positional.size() != 1 || p->get("--arch").empty()) return true;
    return !isKnownTemplateOrPath(p->positional[0]);  // "unknown template" before any compile
  }
  return true;  // version, help, cache, db, unknown commands
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("KTUNE_CACHE_DIR", cacheDir().c_str(), 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> argv;
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      argv.push_back(cur);
      cur.clear();
    } else {
      cur += char(data[i]);
    }
  }
  if (size > 0) argv.push_back(cur);
  if (argv.size() > 64) return 0;

  std::vector<std::string> rest(argv.empty() ? argv.begin() : argv.begin() + 1, argv.end());
  checkParse(argv, compileSpec());
  checkParse(rest, cacheSpec());

  if (!safeToDispatch(argv)) return 0;
  populate();
  const auto before = outsideCache();
  int rc = quietDispatch(argv);
  if (rc < 0 || rc > 4) ktune::fuzz::die(kTarget, "exit code " + std::to_string(rc) + " not in 0-4");
  if (outsideCache() != before) {
    std::string changed;
    for (const auto& [path, size] : outsideCache())
      if (!before.count(path) || before.at(path) != size) changed += " " + path;
    ktune::fuzz::die(kTarget, "a command wrote outside the cache directory:" + changed);
  }
  return 0;
}
