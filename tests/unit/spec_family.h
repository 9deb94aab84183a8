// A family as the engine's own unit tests register it: the one registration type,
// TypedKernelSpec<P> (ktune/typed.hpp), with the engine objects the built-in ops add beside it
// (FamilyExtras, autotune/family.h), the pair Engine::add takes. Tests build one, change a field
// or two, and add it.
#pragma once

#include <utility>

#include "autotune/autotuner.h"

namespace ktune::testfamily {

template <class P>
struct SpecFamily {
  TypedKernelSpec<P> spec;
  FamilyExtras extras;
};

template <class P>
Expected<Family<P>> addFamily(Engine& e, SpecFamily<P> f) {
  return e.add(std::move(f.spec), std::move(f.extras));
}

// The problem behind the pointer an extras callback gets (what the spec's callbacks get as P).
template <class P>
const P& problemOf(const void* p) {
  return *static_cast<const P*>(p);
}

}  // namespace ktune::testfamily
