// The typed registration (include/ktune/typed.hpp) from the public API: the erased spec goes to the
// engine as it is (Engine::addSpec, autotune/family.cc: the same registration the built-in ops and
// a worker plugin use); the handle calls the engine's type-erased entry points with the caller's
// problem pointer. Data families (KernelSpec, api/data_family.h) are parsed into such a spec first.
#include <utility>

#include "api/internal.h"
#include "ktune/typed.hpp"

namespace ktune {

namespace api {

Expected<detail::FamilyState*> addFamily(Autotuner& tuner, ErasedKernelSpec spec) {
  return tuner.impl().tuner->addSpec(std::move(spec));
}

}  // namespace api

Expected<ErasedKernel> addErasedKernel(Autotuner& tuner, ErasedKernelSpec spec) {
  KTUNE_ASSIGN_OR_RETURN(detail::FamilyState * state, api::addFamily(tuner, std::move(spec)));
  auto k = std::make_shared<ErasedKernel::Impl>();
  k->engine = tuner.impl().tuner.get();
  k->state = state;
  return ErasedKernel(std::move(k));
}

Status ErasedKernel::call(const void* p, StreamHandle stream) const {
  if (!impl_) return Status::InvalidArgument("call of an empty ktune::TypedKernel");
  return impl_->engine->call(impl_->state, p, stream);
}

Expected<KeyReport> ErasedKernel::tune(const void* p, StreamHandle stream) const {
  if (!impl_) return Status::InvalidArgument("tune() on an empty ktune::TypedKernel");
  KTUNE_ASSIGN_OR_RETURN(TuneReport r, impl_->engine->tune(impl_->state, p, stream));
  return KeyReport(std::move(r));  // the run's statistics stay in the engine
}

Expected<KeyReport> ErasedKernel::lookup(const void* p) const {
  if (!impl_) return Status::InvalidArgument("lookup() on an empty ktune::TypedKernel");
  return impl_->engine->lookup(impl_->state, p);
}

std::string ErasedKernel::key(const void* p) const {
  return impl_ ? impl_->engine->keyString(impl_->state, p) : std::string();
}

const std::string& ErasedKernel::name() const {
  static const std::string kEmpty;
  return impl_ ? Engine::familyName(impl_->state) : kEmpty;
}

}  // namespace ktune
