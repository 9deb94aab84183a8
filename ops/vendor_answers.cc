#include "ops/vendor_answers.h"

#include <nlohmann/json.hpp>

#include "base/fs.h"
#include "base/sha256.h"
#include "ops/vendor/cublaslt.h"

namespace ktune::vendor_answers {

namespace {

std::string fileOf(const std::string& cache_dir, const std::string& key) {
  return joinPath(joinPath(cache_dir, "vendor"), sha256Hex(key) + ".json");
}

}  // namespace

std::string key(const std::string& source, const std::string& version, const DeviceInfo& dev,
                const gemm::GemmShape& s, int max_algos) {
  return source + "|" + version + "|" + dev.name + "|" + dev.arch + "|" +
         std::to_string(dev.multiprocessors) + "|" + dev.driver_version + "|" + gemm::shapeKey(s) +
         "|" + std::to_string(max_algos) + "|ws=" + std::to_string(cublaslt::kWorkspaceBytes);
}

std::optional<std::vector<VendorCandidate>> read(const std::string& cache_dir, const std::string& key) {
  if (cache_dir.empty()) return std::nullopt;
  auto text = readFile(fileOf(cache_dir, key), 1 << 20);
  if (!text.ok()) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || j.value("key", "") != key || !j.contains("candidates") ||
      !j["candidates"].is_array() || j["candidates"].empty())
    return std::nullopt;
  std::vector<VendorCandidate> out;
  for (const auto& c : j["candidates"]) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string() || !c.contains("source") ||
        !c["source"].is_string())
      return std::nullopt;
    VendorCandidate v;
    v.id = c["id"].get<std::string>();
    v.source = c["source"].get<std::string>();
    if (v.id.empty() || v.source.empty()) return std::nullopt;
    v.is_default = c.value("default", false);
    v.predicted = c.value("predicted", false);
    out.push_back(std::move(v));
  }
  return out;
}

void write(const std::string& cache_dir, const std::string& key,
           const std::vector<VendorCandidate>& list) {
  if (cache_dir.empty() || list.empty()) return;
  nlohmann::json cs = nlohmann::json::array();
  for (const auto& v : list)
    cs.push_back({{"id", v.id}, {"source", v.source}, {"default", v.is_default},
                  {"predicted", v.predicted}});
  const std::string dir = joinPath(cache_dir, "vendor");
  if (!makeDirs(dir).ok()) return;
  // Not durable: a lost file is asked for again.
  (void)writeFileAtomic(fileOf(cache_dir, key),
                        nlohmann::json({{"key", key}, {"candidates", cs}}).dump(), 0600, false);
}

std::vector<VendorCandidate> candidates(const GemmVendor& v, const std::string& cache_dir,
                                        const DeviceInfo& dev, const gemm::GemmShape& s,
                                        int max_algos) {
  if (cache_dir.empty() || max_algos <= 0) return v.candidates(s, max_algos);
  const std::string k = key(v.source(), v.version(), dev, s, max_algos);
  if (auto kept = read(cache_dir, k)) return std::move(*kept);
  std::vector<VendorCandidate> out = v.candidates(s, max_algos);
  write(cache_dir, k, out);
  return out;
}

std::string keptDefault(const GemmVendor& v, const std::string& cache_dir, const DeviceInfo& dev,
                        const gemm::GemmShape& s, int max_algos) {
  if (cache_dir.empty() || max_algos <= 0) return "";
  auto kept = read(cache_dir, key(v.source(), v.version(), dev, s, max_algos));
  if (!kept) return "";
  for (const auto& c : *kept)
    if (c.is_default) return c.id;
  return "";
}

}  // namespace ktune::vendor_answers
