#include "ops/builtin.h"

#include <algorithm>
#include <optional>

#include "ops/gemm_configs.h"
#include "ops/rowwise.h"
#include "templates/gemm.h"
#include "templates/rowwise.h"

namespace ktune {

Expected<BuiltinOps> registerBuiltinOps(std::shared_ptr<Engine> tuner, GemmOp::OpOptions gemm) {
  if (!tuner) return Status::InvalidArgument("registerBuiltinOps needs a Engine");
  BuiltinOps out;
  if (tuner->device().vendor == Vendor::kSimulated) {
    out.notes.push_back("built-in ops are not served on the simulated device " +
                        tuner->device().name + " (their kernels need a GPU backend)");
    return out;
  }
  Status rs = registerRowwiseOps(*tuner);
  if (rs.ok()) {
    out.rowwise = true;
  } else {
    out.notes.push_back("row-wise ops not served: " + rs.toString());
  }
  auto g = GemmOp::create(tuner, std::move(gemm));
  if (g.ok()) {
    out.gemm = std::move(g).value();
  } else {
    out.notes.push_back("gemm not served: " + g.status().toString());
  }
  return out;
}

}  // namespace ktune

namespace ktune {
namespace {

namespace rw = rowwise;

// c in `space` with every value one of the listed ones (what tuning can have recorded).
Status inListedSpace(const ConfigSpace& space, const Config& c, const std::string& backend) {
  KTUNE_RETURN_IF_ERROR(space.validate(c, backend));
  for (const auto& [name, value] : c.params())
    for (const auto& spec : space.params())
      if (spec.name == name &&
          std::find(spec.values.begin(), spec.values.end(), value) == spec.values.end())
        return Status::InvalidArgument(name + "=" + paramValueToString(value) +
                                       " is not one of its listed values");
  return Status::Ok();
}

Status checkGemmConfig(const Config& c) {
  KTUNE_ASSIGN_OR_RETURN(gemm::KernelKind k, gemm_ops::kindOf(c));
  Config rest;
  for (const auto& [name, value] : c.params())
    if (name != "KIND") rest.set(name, value);
  return inListedSpace(gemm::configSpace(k), rest, "");
}

}  // namespace

TuningDatabase::ImportCheck builtinImportCheck(const std::string& family) {
  const bool rms = family.rfind("rmsnorm_", 0) == 0, silu = family.rfind("silu_mul_", 0) == 0;
  std::optional<rw::RowDType> dt;
  if (rms || silu) {
    auto d = rw::parseDType(family.substr(family.find('_', rms ? 0 : 5) + 1));
    if (d.ok()) dt = *d;
  }
  if (family != "gemm" && !dt) return {};
  return [family, dt, rms](const Validator& v, const std::string& source,
                           const std::string& config) -> Status {
    if (isVendorSource(source)) {
      if (family == "gemm" && (source == "cublaslt" || source == "hipblaslt")) return Status::Ok();
      return Status::InvalidArgument("family " + family + " has no " + source + " candidates");
    }
    KTUNE_ASSIGN_OR_RETURN(Config c, Config::parse(config));
    if (family == "gemm") return checkGemmConfig(c).withContext("not a GEMM config");
    auto lim = rw::limitsForArch(v.arch);
    if (!lim.ok()) return lim.status().withContext("device block of arch '" + v.arch + "'");
    const ConfigSpace space = rms ? rw::rmsNormSpace(*dt, *lim) : rw::siluMulSpace(*dt, *lim);
    return inListedSpace(space, c, lim->backend)
        .withContext("not in family " + family + "'s config space on " + v.arch);
  };
}

}  // namespace ktune
