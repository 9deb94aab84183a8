#include "autotune/ops/builtin.h"

#include "autotune/ops/rowwise.h"

namespace ktune {

Expected<BuiltinOps> registerBuiltinOps(std::shared_ptr<Tuner> tuner) {
  if (!tuner) return Status::InvalidArgument("registerBuiltinOps needs a Tuner");
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
  auto g = GemmOp::create(tuner);
  if (g.ok()) {
    out.gemm = std::move(g).value();
  } else {
    out.notes.push_back("gemm not served: " + g.status().toString());
  }
  return out;
}

}  // namespace ktune
