#include "compiler/resources_json.h"

#include <array>
#include <tuple>

#include "base/json_fields.h"

namespace ktune {
namespace {

constexpr std::array<const char*, 13> kNames = {
    "registers",  "spill_store_bytes", "spill_load_bytes", "stack_bytes",  "vgpr",
    "agpr",       "sgpr",              "vgpr_spill",       "sgpr_spill",   "scratch_bytes",
    "shared_bytes", "wave_size",       "max_threads_per_block"};

template <typename R>
auto members(R& r) {
  return std::tie(r.registers, r.spill_store_bytes, r.spill_load_bytes, r.stack_bytes, r.vgpr,
                  r.agpr, r.sgpr, r.vgpr_spill, r.sgpr_spill, r.scratch_bytes, r.shared_bytes,
                  r.wave_size, r.max_threads_per_block);
}

constexpr std::array<const char*, 7> kCodeObjectNames = {
    "arch", "entry", "lowered_entry", "compiler", "compiler_version", "options", "compile_ms"};

template <typename C>
auto codeObjectMembers(C& o) {
  return std::tie(o.arch, o.entry, o.lowered_entry, o.compiler, o.compiler_version, o.options,
                  o.compile_ms);
}

constexpr std::array<const char*, 8> kAmdOccupancyNames = {
    "vgpr_allocated", "occ_vgpr", "occ_sgpr", "occ_lds", "workgroups_per_cu", "waves_per_eu",
    "llvm_waves_per_eu", "limiter"};
constexpr std::array<const char*, 7> kNvOccupancyNames = {
    "blocks_per_sm", "by_regs", "by_smem", "by_threads", "by_blocks", "occupancy", "limiter"};

}  // namespace

nlohmann::json codeObjectFactsToJson(const CodeObject& o) {
  nlohmann::json j = jsonfields::writeFields(kCodeObjectNames, codeObjectMembers(o));
  j["resources"] = resourcesToJson(o.resources);
  return j;
}

void codeObjectFactsFromJson(const nlohmann::json& j, CodeObject* o) {
  jsonfields::readFields(j, kCodeObjectNames, codeObjectMembers(*o));
  if (j.contains("resources")) o->resources = resourcesFromJson(j.at("resources"));
}

nlohmann::json occupancyToJson(const AmdOccupancy& o) {
  return jsonfields::writeFields(kAmdOccupancyNames,
                                 std::tie(o.vgpr_allocated, o.occ_vgpr, o.occ_sgpr, o.occ_lds,
                                          o.workgroups_per_cu, o.waves_per_eu,
                                          o.llvm_waves_per_eu, o.limiter));
}

nlohmann::json occupancyToJson(const NvOccupancy& o) {
  return jsonfields::writeFields(kNvOccupancyNames,
                                 std::tie(o.blocks_per_sm, o.by_regs, o.by_smem, o.by_threads,
                                          o.by_blocks, o.occupancy, o.limiter));
}

nlohmann::json resourcesToJson(const ResourceUsage& r) {
  return jsonfields::writeFields(kNames, members(r));
}

ResourceUsage resourcesFromJson(const nlohmann::json& j) {
  ResourceUsage r;
  jsonfields::readFields(j, kNames, members(r));
  return r;
}

}  // namespace ktune
