#include "compiler/analysis/amd_metadata.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ktune {
namespace {

size_t indentOf(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return i;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  s = s.substr(i);
  if (s.size() >= 2 &&
      ((s.front() == '\'' && s.back() == '\'') || (s.front() == '"' && s.back() == '"')))
    s = s.substr(1, s.size() - 2);
  return s;
}

// "key: value" with key starting at position `at`; false if the line has no such pair.
bool splitKey(const std::string& line, size_t at, std::string* key, std::string* value) {
  const auto colon = line.find(':', at);
  if (colon == std::string::npos) return false;
  *key = line.substr(at, colon - at);
  if (key->empty() || key->find(' ') != std::string::npos) return false;
  *value = trim(line.substr(colon + 1));
  return true;
}

int64_t toInt(const std::map<std::string, std::string>& f, const char* key) {
  auto it = f.find(key);
  return it == f.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}

}  // namespace

std::vector<AmdKernelMeta> parseAmdgpuMetadataYaml(const std::string& text) {
  std::vector<AmdKernelMeta> out;
  std::istringstream in(text);
  std::string line;
  bool in_kernels = false;
  size_t list_indent = std::string::npos;  // column of "- " starting a kernel
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t ind = indentOf(line);
    if (ind == line.size()) continue;
    if (!in_kernels) {
      if (line.compare(ind, 15, "amdhsa.kernels:") == 0) in_kernels = true;
      continue;
    }
    if (ind == 0 && line[0] != '-') break;  // next top-level key ends the list
    if (line.compare(ind, 3, "---") == 0 || line.compare(ind, 3, "...") == 0 ||
        line.compare(ind, 1, "\t") == 0)
      break;
    std::string key, value;
    if (line.compare(ind, 2, "- ") == 0) {
      if (list_indent == std::string::npos) list_indent = ind;
      if (ind != list_indent) continue;  // an item of a nested list (.args)
      out.emplace_back();
      if (splitKey(line, ind + 2, &key, &value) && !value.empty()) out.back().fields[key] = value;
      continue;
    }
    if (out.empty() || ind != list_indent + 2) continue;
    if (splitKey(line, ind, &key, &value) && !value.empty()) out.back().fields[key] = value;
  }
  for (auto& k : out) {
    k.name = k.fields.count(".name") ? k.fields[".name"] : "";
    k.symbol = k.fields.count(".symbol") ? k.fields[".symbol"] : "";
  }
  return out;
}

const AmdKernelMeta* findAmdKernel(const std::vector<AmdKernelMeta>& kernels,
                                   const std::string& name) {
  for (const auto& k : kernels)
    if (!name.empty() && (k.name == name || k.symbol == name + ".kd")) return &k;
  return kernels.size() == 1 && name.empty() ? &kernels[0] : nullptr;
}

ResourceUsage amdResources(const AmdKernelMeta& k) {
  ResourceUsage r;
  r.vgpr = static_cast<int>(toInt(k.fields, ".vgpr_count"));
  r.agpr = static_cast<int>(toInt(k.fields, ".agpr_count"));
  r.sgpr = static_cast<int>(toInt(k.fields, ".sgpr_count"));
  r.vgpr_spill = static_cast<int>(toInt(k.fields, ".vgpr_spill_count"));
  r.sgpr_spill = static_cast<int>(toInt(k.fields, ".sgpr_spill_count"));
  r.shared_bytes = toInt(k.fields, ".group_segment_fixed_size");
  r.scratch_bytes = toInt(k.fields, ".private_segment_fixed_size");
  r.wave_size = static_cast<int>(toInt(k.fields, ".wavefront_size"));
  r.max_threads_per_block = static_cast<int>(toInt(k.fields, ".max_flat_workgroup_size"));
  return r;
}

LlvmKernelInfo parseLlvmKernelInfo(const std::string& text, const std::string& name) {
  LlvmKernelInfo info;
  size_t at = 0;
  if (!name.empty()) {
    at = text.find("\n" + name + ":");
    if (at == std::string::npos) return info;
  }
  size_t p = text.find("; Kernel info:", at);
  if (p == std::string::npos) return info;
  std::istringstream in(text.substr(p));
  std::string line;
  std::getline(in, line);  // "; Kernel info:"
  const std::pair<const char*, int*> ints[] = {{"; NumVgprs:", &info.num_vgprs},
                                               {"; NumAgprs:", &info.num_agprs},
                                               {"; TotalNumVgprs:", &info.total_vgprs},
                                               {"; NumSgprs:", &info.num_sgprs},
                                               {"; Occupancy:", &info.occupancy}};
  while (std::getline(in, line) && line.rfind(";", 0) == 0) {
    for (const auto& [key, field] : ints)
      if (line.rfind(key, 0) == 0) *field = std::atoi(line.c_str() + std::strlen(key));
    if (line.rfind("; LDSByteSize:", 0) == 0) info.lds_bytes = std::atoll(line.c_str() + 14);
    if (line.rfind("; ScratchSize:", 0) == 0) info.scratch_bytes = std::atoll(line.c_str() + 14);
  }
  return info;
}

}  // namespace ktune
