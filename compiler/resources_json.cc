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

}  // namespace

nlohmann::json resourcesToJson(const ResourceUsage& r) {
  return jsonfields::writeFields(kNames, members(r));
}

ResourceUsage resourcesFromJson(const nlohmann::json& j) {
  ResourceUsage r;
  jsonfields::readFields(j, kNames, members(r));
  return r;
}

}  // namespace ktune
