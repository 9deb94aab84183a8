// `ktune info`: what this machine offers ktune, and what is missing and why.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/options.h"
#include "base/subprocess.h"
#include "base/version.h"
#include "compiler/compiler.h"
#include "compiler/store/store.h"
#include "runtime/backend.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace ktune::cli {
namespace {

nlohmann::json deviceJson(const DeviceInfo& d) {
  return {{"ordinal", d.ordinal},
          {"vendor", vendorName(d.vendor)},
          {"name", d.name},
          {"arch", d.arch},
          {"multiprocessors", d.multiprocessors},
          {"warp_size", d.warp_size},
          {"shared_per_block", d.shared_per_block},
          {"shared_per_block_optin", d.shared_per_block_optin},
          {"shared_per_sm", d.shared_per_sm},
          {"regs_per_block", d.regs_per_block},
          {"regs_per_sm", d.regs_per_sm},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"l2_bytes", d.l2_bytes},
          {"global_mem_bytes", d.global_mem_bytes},
          {"clock_khz", d.clock_khz},
          {"mem_clock_khz", d.mem_clock_khz},
          {"mem_bus_width_bits", d.mem_bus_width_bits},
          {"driver_version", d.driver_version}};
}

nlohmann::json backendJson(const char* name, Expected<std::unique_ptr<Backend>> b) {
  nlohmann::json j = {{"name", name}};
  if (!b.ok()) {
    j["available"] = false;
    j["reason"] = b.status().message();
    return j;
  }
  j["available"] = true;
  j["version"] = (*b)->version();
  auto devs = (*b)->devices();
  if (!devs.ok()) {
    j["available"] = false;
    j["reason"] = devs.status().message();
    return j;
  }
  j["devices"] = nlohmann::json::array();
  for (const auto& d : *devs) j["devices"].push_back(deviceJson(d));
  return j;
}

nlohmann::json compilerJson(const char* name, Expected<std::unique_ptr<Compiler>> c) {
  nlohmann::json j = {{"name", name}};
  if (!c.ok()) {
    j["available"] = false;
    j["reason"] = c.status().message();
  } else {
    j["available"] = true;
    j["version"] = (*c)->version();
  }
  return j;
}

}  // namespace

int cmdInfo(const std::vector<std::string>& argv) {
  auto args = parseArgs(argv, {{"--json"}});
  if (!args.ok()) return usage(args.status().message(), "ktune info [--json]");
  if (args->help)
    return help("ktune info [--json]\n  backends and devices, compilers and their versions, the cache; "
                "under \"Missing\", what is absent and why");
  auto opts = Options::fromEnv();
  if (!opts.ok()) return fail(opts.status());

  nlohmann::json j;
  j["ktune_version"] = KTUNE_VERSION;
  j["schema_version"] = KTUNE_SCHEMA_VERSION;
  j["backends"] = {backendJson("cuda", openCudaBackend()), backendJson("hip", openHipBackend())};
  j["compilers"] = {compilerJson("nvrtc", openNvrtcCompiler()),
                    compilerJson("hiprtc", openHiprtcCompiler()),
                    compilerJson("clang-amdgpu", openLlvmAmdgpuCompiler(opts->clang)),
                    compilerJson("ir", openIrCompiler())};
  nlohmann::json tools = nlohmann::json::object();
  for (const char* t : {"nvdisasm", "cuobjdump", "mlir-translate-19", "mlir-opt-19", "llc-19",
                        "opt-19", "llvm-mc-19", "ld.lld-19", "llvm-objdump-19"}) {
    std::string p = findProgram(t);
    if (p.empty() && (std::string(t) == "nvdisasm" || std::string(t) == "cuobjdump"))
      p = findProgram(std::string("/usr/local/cuda/bin/") + t);
    tools[t] = p.empty() ? nlohmann::json(nullptr) : nlohmann::json(p);
  }
  j["tools"] = tools;
  nlohmann::json cache = {{"dir", opts->cache_dir}};
  if (pathExists(opts->cache_dir)) {
    cache["bytes"] = treeSize(opts->cache_dir);
    Status safe = checkPrivateDir(opts->cache_dir);
    cache["safe"] = safe.ok();
    if (!safe.ok()) cache["problem"] = safe.message();
    auto store = CodeObjectStore::open(opts->cache_dir);
    if (store.ok()) {
      auto l = (*store)->list();
      if (l.ok()) cache["code_objects"] = l->size();
    }
  } else {
    cache["bytes"] = 0;
    cache["note"] = "not created yet (made 0700 on first use)";
  }
  j["cache"] = cache;
  j["tuning"] = opts->tuning;
  j["remote"] = nlohmann::json::parse(remoteInfoJson(*opts));  // cmd_remote.cc

  if (args->has("--json")) {
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("ktune %s (schema %d)\n\nBackends\n", KTUNE_VERSION, KTUNE_SCHEMA_VERSION);
  std::vector<std::string> missing;
  for (const auto& b : j["backends"]) {
    if (!b["available"].get<bool>()) {
      std::printf("  %-6s unavailable: %s\n", b["name"].get<std::string>().c_str(),
                  b["reason"].get<std::string>().c_str());
      missing.push_back(b["name"].get<std::string>() + " backend: " + b["reason"].get<std::string>());
      continue;
    }
    std::printf("  %-6s driver %s, %zu device(s)\n", b["name"].get<std::string>().c_str(),
                b["version"].get<std::string>().c_str(), b["devices"].size());
    for (const auto& d : b["devices"]) {
      std::printf("    [%d] %s  arch %s  %d SMs/CUs  warp %d  L2 %.1f MiB  shared/block %lld (opt-in %lld)  "
                  "mem %.1f GiB\n",
                  d["ordinal"].get<int>(), d["name"].get<std::string>().c_str(),
                  d["arch"].get<std::string>().c_str(), d["multiprocessors"].get<int>(),
                  d["warp_size"].get<int>(), d["l2_bytes"].get<double>() / (1 << 20),
                  d["shared_per_block"].get<long long>(), d["shared_per_block_optin"].get<long long>(),
                  d["global_mem_bytes"].get<double>() / (1 << 30));
    }
  }
  std::printf("\nCompilers\n");
  for (const auto& c : j["compilers"]) {
    if (c["available"].get<bool>()) {
      std::printf("  %-13s %s\n", c["name"].get<std::string>().c_str(),
                  c["version"].get<std::string>().c_str());
    } else {
      std::printf("  %-13s unavailable: %s\n", c["name"].get<std::string>().c_str(),
                  c["reason"].get<std::string>().c_str());
      missing.push_back(c["name"].get<std::string>() + ": " + c["reason"].get<std::string>());
    }
  }
  std::printf("\nTools\n");
  for (auto it = tools.begin(); it != tools.end(); ++it) {
    std::printf("  %-18s %s\n", it.key().c_str(),
                it.value().is_null() ? "not found" : it.value().get<std::string>().c_str());
    if (it.value().is_null()) missing.push_back(it.key() + " not found on PATH");
  }
  std::printf("\nCache\n  dir   %s\n", opts->cache_dir.c_str());
  std::printf("  size  %.1f KiB\n", cache["bytes"].get<double>() / 1024);
  if (cache.contains("code_objects"))
    std::printf("  code objects  %zu\n", cache["code_objects"].get<size_t>());
  if (cache.contains("problem")) {
    std::printf("  PROBLEM: %s\n", cache["problem"].get<std::string>().c_str());
    missing.push_back(cache["problem"].get<std::string>());
  }
  std::printf("  tuning %s\n", opts->tuning ? "on" : "off (KTUNE_TUNING=0)");
  std::printf("\nRemote\n  %s\n", j["remote"]["summary"].get<std::string>().c_str());
  if (j["remote"].contains("problem")) missing.push_back(j["remote"]["problem"].get<std::string>());
  if (!missing.empty()) {
    std::printf("\nMissing\n");
    for (const auto& m : missing) std::printf("  - %s\n", m.c_str());
  }
  return kExitOk;
}

}  // namespace ktune::cli
