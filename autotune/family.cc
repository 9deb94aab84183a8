// The one registration of a family (ktune/typed.hpp's spec, erased) as the engine's family: the
// public views over the engine's config, key and argument buffers, and the conversion of a spec
// plus the built-in ops' FamilyExtras into detail::ErasedFamily.
#include <algorithm>
#include <cctype>
#include <utility>

#include "autotune/family.h"

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

namespace detail {
namespace {

bool identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The verify callback's Status as the engine's verdict: an error (kWrongResult or any other)
// fails the candidate with it.
Expected<VerifyResult> verdictOf(const Status& st) {
  if (!st.ok()) return st;
  return VerifyResult{};
}

// The space from the spec's knob lists and rules, unless the extras bring their own.
void setSpace(const ErasedKernelSpec& s, FamilyExtras& x, ErasedFamily& f) {
  if (x.space) {
    f.space = std::move(*x.space);
  } else {
    for (const auto& k : s.space) f.space.addInts(k.name, k.values);
    if (s.constraint)
      f.space.constrain("constraint of " + s.name,
                        [g = s.constraint](const Config& c) { return g(Knobs(&c)); });
    for (const auto& k : s.constraints)
      f.space.constrain(k.name, [g = k.holds](const Config& c) { return g(Knobs(&c)); });
    if (s.shared_bytes)
      f.space.sharedBytes([g = s.shared_bytes](const Config& c) { return g(Knobs(&c)); });
  }
  f.configs = std::move(x.configs);
  for (const auto& k : s.space) f.default_config.set(k.name, k.values.front());
  for (const auto& [n, v] : s.default_config) f.default_config.set(n, v);
  if (x.default_config) f.default_config = std::move(*x.default_config);
  if (x.defines) {
    f.defines = std::move(x.defines);
  } else if (!s.defines.empty()) {
    f.defines = [names = s.defines](const Config& c, const void*) {
      Defines d;
      for (const auto& n : names) d.emplace_back(n, c.getStr(n));
      return d;
    };
  }
}

// The module of a config: the extras' callback, else the spec's (the language by name).
void setSource(const ErasedKernelSpec& s, FamilyExtras& x, ErasedFamily& f) {
  f.name = s.name;
  f.source = s.source;
  f.source_name = std::move(x.source_name);
  f.entry = s.entry;
  f.entry_fn = std::move(x.entry_fn);
  f.compile_options = s.compile_options;
  if (x.source_fn) {
    f.source_fn = std::move(x.source_fn);
  } else if (s.source_fn) {
    f.source_fn = [g = s.source_fn](const Config& c, const void* p) -> Expected<ConfigModule> {
      KTUNE_ASSIGN_OR_RETURN(ConfigSource src, g(Knobs(&c), p));
      ConfigModule m;
      KTUNE_ASSIGN_OR_RETURN(m.language, parseLanguage(src.language));
      m.text = std::move(src.text);
      m.entry = std::move(src.entry);
      return m;
    };
  }
}

// Key, launch rule and arguments: the hot path's callbacks, through the public views.
void setCallRules(const ErasedKernelSpec& s, const DeviceInfo& dev, ErasedFamily& f) {
  if (s.key)
    f.key = [g = s.key](const void* p, KeyBuilder& k) {
      KeyFields fields(&k);
      g(p, fields);
    };
  f.launch_per_key = s.launch_per_key;
  if (s.programmatic_wait) f.programmatic_wait = [](const Config&) { return true; };
  if (!s.launch || !s.args) return;  // a family of vendor candidates only
  DeviceFacts facts{dev.name, dev.arch, dev.multiprocessors, dev.warp_size};
  f.launch = [g = s.launch, facts](const Config& c, const void* p, const DeviceInfo&) {
    Launch l = g(Knobs(&c), p, facts);
    LaunchDims d;
    d.grid = Dim3{l.grid[0], l.grid[1], l.grid[2]};
    d.block = Dim3{l.block[0], l.block[1], l.block[2]};
    d.shared = l.shared_bytes;
    d.persistent_cluster = l.persistent_cluster;
    if (!l.refused.ok()) d.refused = std::make_shared<const Status>(std::move(l.refused));
    return d;
  };
  f.args = [g = s.args](const void* p, KernelArgs& a) {
    ArgPack pack(&a);
    g(p, pack);
  };
}

// The run hooks, verification, defaults, vendor candidates and the problem's JSON.
void setRunHooks(ErasedKernelSpec& s, FamilyExtras& x, ErasedFamily& f) {
  if (s.before_launch)
    f.before_launch = [g = std::move(s.before_launch)](const Config& c, const void* p,
                                                       StreamHandle st) {
      return g(Knobs(&c), p, st);
    };
  if (x.programmatic_wait) f.programmatic_wait = std::move(x.programmatic_wait);
  if (x.config_args) f.config_args = std::move(x.config_args);
  f.pre_run = std::move(s.before_run);
  f.pre_timed_run = std::move(s.before_timed_run);
  if (x.verify) {
    f.verify = std::move(x.verify);
  } else if (s.verify) {
    f.verify = [g = std::move(s.verify)](const void* p, StreamHandle st) {
      return verdictOf(g(p, st));
    };
  }
  f.no_verify = s.no_verify;
  f.verify_hint = std::move(s.verify_hint);
  f.default_for = std::move(x.default_for);
  f.prune = std::move(x.prune);
  f.race_each = std::move(x.race_each);
  f.guided_leave_out = std::move(x.guided_leave_out);
  f.vendor_candidates = std::move(s.vendor_candidates);
  f.vendor_launch = std::move(s.vendor_launch);
  f.args_json = std::move(s.args_json);
  f.make_problem = std::move(s.make_problem);
}

}  // namespace

Status checkSpec(const ErasedKernelSpec& s, const FamilyExtras& x) {
  const std::string who = "kernel family '" + s.name + "': ";
  const bool source_fn = s.source_fn || x.source_fn;
  const bool vendor_only = s.source.empty() && !source_fn && s.vendor_candidates;
  if (!vendor_only && (s.source_fn ? !s.source.empty() : (s.source.empty() && !x.source_fn)))
    return Status::InvalidArgument(who + (s.source_fn ? "source_fn replaces source: give one of them"
                                                      : "source and entry are required"));
  if (!vendor_only && s.entry.empty() && !s.source_fn && !x.entry_fn)
    return Status::InvalidArgument(who + "source and entry are required");
  if (!s.key || (!vendor_only && (!s.launch || !s.args)))
    return Status::InvalidArgument(who + "key, launch and args are required");
  if (s.space.empty() && !x.space && x.configs.empty() && !vendor_only)
    return Status::InvalidArgument(who + "the space has no knob");
  for (const auto& k : s.space) {
    if (!identifier(k.name) || k.values.empty())
      return Status::InvalidArgument(who + "knob '" + k.name +
                                     "' needs an identifier name and at least one value");
  }
  auto known = [&s](const std::string& n) {
    return std::any_of(s.space.begin(), s.space.end(),
                       [&n](const KnobValues& k) { return k.name == n; });
  };
  for (const auto& d : s.defines)
    if (!known(d)) return Status::InvalidArgument(who + "define '" + d + "' is not a knob");
  for (const auto& [n, v] : s.default_config)
    if (!known(n))
      return Status::InvalidArgument(who + "default_config names '" + n + "', not a knob");
  return Status::Ok();
}

ErasedFamily toErasedFamily(ErasedKernelSpec s, FamilyExtras x, const DeviceInfo& dev) {
  ErasedFamily f;
  f.problem_type = s.problem_type;
  setSpace(s, x, f);
  setSource(s, x, f);
  setCallRules(s, dev, f);
  setRunHooks(s, x, f);
  return f;
}

}  // namespace detail
}  // namespace ktune
