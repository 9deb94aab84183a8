// The typed registration (include/ktune/typed.hpp), the one way a family reaches the engine from
// the public API: an ErasedKernelSpec becomes an engine family whose problem is the caller's object
// behind a pointer; its callbacks see the engine's config, key and argument buffers through the
// small public views (Knobs, KeyFields, ArgPack). Data families (KernelSpec, api/data_family.h)
// are parsed into such a spec first.
#include <algorithm>
#include <cctype>
#include <utility>

#include "api/internal.h"
#include "ktune/typed.hpp"

namespace ktune {

int64_t Knobs::get(const char* name) const {
  return static_cast<const Config*>(config_)->getInt(name);
}
std::string Knobs::toString() const { return static_cast<const Config*>(config_)->toString(); }

KeyFields& KeyFields::add(const char* name, int64_t value) {
  static_cast<KeyBuilder*>(builder_)->add(name, value);
  return *this;
}

void ArgPack::addBytes(const void* p, size_t size, size_t align) {
  static_cast<KernelArgs*>(args_)->addBytes(p, size, align);
}

namespace api {
namespace {

bool identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Status checkSpec(const ErasedKernelSpec& s) {
  const std::string who = "typed kernel '" + s.name + "': ";
  if (s.source_fn ? !s.source.empty() : (s.source.empty() || s.entry.empty()))
    return Status::InvalidArgument(who + (s.source_fn ? "source_fn replaces source: give one of them"
                                                      : "source and entry are required"));
  if (!s.key || !s.launch || !s.args)
    return Status::InvalidArgument(who + "key, launch and args are required");
  if (s.space.empty()) return Status::InvalidArgument(who + "the space has no knob");
  for (const auto& k : s.space) {
    if (!identifier(k.name) || k.values.empty())
      return Status::InvalidArgument(who + "knob '" + k.name +
                                     "' needs an identifier name and at least one value");
  }
  auto known = [&s](const std::string& n) {
    return std::any_of(s.space.begin(), s.space.end(), [&n](const KnobValues& k) { return k.name == n; });
  };
  for (const auto& d : s.defines)
    if (!known(d)) return Status::InvalidArgument(who + "define '" + d + "' is not a knob");
  for (const auto& [n, v] : s.default_config)
    if (!known(n)) return Status::InvalidArgument(who + "default_config names '" + n + "', not a knob");
  return Status::Ok();
}

const void* problemOf(const TypedProblem& t) { return t.p; }

// The verify callback's Status as the engine's verdict: an error (kWrongResult or any other)
// fails the candidate with it.
Expected<VerifyResult> verdictOf(const Status& st) {
  if (!st.ok()) return st;
  return VerifyResult{};
}

void setSpace(const ErasedKernelSpec& s, KernelFamily<TypedProblem>& f) {
  for (const auto& k : s.space) f.space.addInts(k.name, k.values);
  if (s.constraint)
    f.space.constrain("constraint of " + s.name,
                      [g = s.constraint](const Config& c) { return g(Knobs(&c)); });
  for (const auto& k : s.constraints)
    f.space.constrain(k.name, [g = k.holds](const Config& c) { return g(Knobs(&c)); });
  if (s.shared_bytes)
    f.space.sharedBytes([g = s.shared_bytes](const Config& c) { return g(Knobs(&c)); });
  for (const auto& k : s.space) f.default_config.set(k.name, k.values.front());
  for (const auto& [n, v] : s.default_config) f.default_config.set(n, v);
  if (!s.defines.empty()) {
    f.defines = [names = s.defines](const Config& c, const TypedProblem&) {
      Defines d;
      for (const auto& n : names) d.emplace_back(n, c.getStr(n));
      return d;
    };
  }
}

// The engine's source_fn over the public one (the language by name).
void setSourceFn(const ErasedKernelSpec& s, KernelFamily<TypedProblem>& f) {
  if (!s.source_fn) return;
  f.source_fn = [g = s.source_fn](const Config& c,
                                  const TypedProblem& t) -> Expected<ConfigModule> {
    KTUNE_ASSIGN_OR_RETURN(ConfigSource src, g(Knobs(&c), problemOf(t)));
    ConfigModule m;
    KTUNE_ASSIGN_OR_RETURN(m.language, parseLanguage(src.language));
    m.text = std::move(src.text);
    m.entry = std::move(src.entry);
    return m;
  };
}

KernelFamily<TypedProblem> toEngine(ErasedKernelSpec s, const DeviceInfo& dev) {
  KernelFamily<TypedProblem> f;
  setSpace(s, f);
  setSourceFn(s, f);
  f.name = s.name;
  f.source = s.source;
  f.entry = s.entry;
  f.compile_options = s.compile_options;
  f.key = [g = s.key](const TypedProblem& t, KeyBuilder& k) {
    KeyFields fields(&k);
    g(problemOf(t), fields);
  };
  DeviceFacts facts{dev.name, dev.arch, dev.multiprocessors, dev.warp_size};
  f.launch = [g = s.launch, facts](const Config& c, const TypedProblem& t, const DeviceInfo&) {
    const Launch l = g(Knobs(&c), problemOf(t), facts);
    LaunchDims d;
    d.grid = Dim3{l.grid[0], l.grid[1], l.grid[2]};
    d.block = Dim3{l.block[0], l.block[1], l.block[2]};
    d.shared = l.shared_bytes;
    return d;
  };
  f.launch_per_key = s.launch_per_key;
  f.args = [g = s.args](const TypedProblem& t, KernelArgs& a) {
    ArgPack pack(&a);
    g(problemOf(t), pack);
  };
  if (s.before_run)
    f.pre_run = [g = s.before_run](const TypedProblem& t, StreamHandle st) {
      return g(problemOf(t), st);
    };
  if (s.verify)
    f.verify = [g = s.verify](const TypedProblem& t, StreamHandle st) {
      return verdictOf(g(problemOf(t), st));
    };
  f.no_verify = s.no_verify;
  f.verify_hint = s.verify_hint;
  return f;
}

}  // namespace

Expected<Family<TypedProblem>> addFamily(Autotuner& tuner, ErasedKernelSpec spec) {
  KTUNE_RETURN_IF_ERROR(checkSpec(spec));
  Engine& t = *tuner.impl().tuner;
  return t.add(toEngine(std::move(spec), t.device()));
}

}  // namespace api

Expected<ErasedKernel> addErasedKernel(Autotuner& tuner, ErasedKernelSpec spec) {
  KTUNE_ASSIGN_OR_RETURN(auto fam, api::addFamily(tuner, std::move(spec)));
  auto k = std::make_shared<ErasedKernel::Impl>();
  k->family = fam;
  return ErasedKernel(std::move(k));
}

Status ErasedKernel::call(const void* p, StreamHandle stream) const {
  if (!impl_) return Status::InvalidArgument("call of an empty ktune::TypedKernel");
  return impl_->family(api::TypedProblem{p}, stream);
}

Expected<KeyReport> ErasedKernel::tune(const void* p, StreamHandle stream) const {
  if (!impl_) return Status::InvalidArgument("tune() on an empty ktune::TypedKernel");
  KTUNE_ASSIGN_OR_RETURN(TuneReport r, impl_->family.tune(api::TypedProblem{p}, stream));
  return KeyReport(std::move(r));  // the run's statistics stay in the engine
}

Expected<KeyReport> ErasedKernel::lookup(const void* p) const {
  if (!impl_) return Status::InvalidArgument("lookup() on an empty ktune::TypedKernel");
  return impl_->family.lookup(api::TypedProblem{p});
}

std::string ErasedKernel::key(const void* p) const {
  return impl_ ? impl_->family.key(api::TypedProblem{p}) : std::string();
}

const std::string& ErasedKernel::name() const {
  static const std::string kEmpty;
  return impl_ ? impl_->family.name() : kEmpty;
}

}  // namespace ktune
