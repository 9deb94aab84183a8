#include "api/data_family.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstring>
#include <limits>
#include <typeinfo>

#include "autotune/key.h"
#include "base/json_bounded.h"

namespace ktune::api {
namespace {

using Json = nlohmann::json;

bool isIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

const char* argTypeName(ArgType t) {
  switch (t) {
    case ArgType::kPtr: return "ptr";
    case ArgType::kI32: return "i32";
    case ArgType::kI64: return "i64";
    case ArgType::kF32: return "f32";
    case ArgType::kF64: return "f64";
  }
  return "?";
}

bool isInteger(ArgType t) { return t == ArgType::kI32 || t == ArgType::kI64; }

Status parseSpace(const Json& j, DataFamily* f) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("kernel '" + f->spec.name + "': space_json: " + why);
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  auto params = j.find("params");
  if (params == j.end() || !params->is_object() || params->empty())
    return bad("needs \"params\": {\"KNOB\": [values], ...} with at least one knob");
  if (params->size() > DataFamily::kMaxKnobs)
    return bad("more than " + std::to_string(DataFamily::kMaxKnobs) + " knobs");
  for (auto it = params->begin(); it != params->end(); ++it) {
    if (!isIdentifier(it.key())) return bad("knob name '" + it.key() + "' is not an identifier");
    if (!it->is_array() || it->empty()) return bad("knob '" + it.key() + "' needs a non-empty array");
    std::vector<int64_t> vals;
    for (const Json& v : *it) {
      if (!v.is_number_integer()) return bad("knob '" + it.key() + "': values must be integers");
      vals.push_back(v.get<int64_t>());
    }
    f->knobs.push_back(it.key());
    f->knob_values.push_back(std::move(vals));
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "params" && k != "constraints" && k != "default")
      return bad("unknown field \"" + k + "\" (expected params, constraints, default)");
  }
  return Status::Ok();
}

// Resolver over knobs (when `knobs`), integer arguments (when `args`) and device values.
Expr::Resolver resolverFor(const DataFamily& f, bool knobs, bool args, std::string* known) {
  if (knobs) for (const auto& k : f.knobs) *known += (known->empty() ? "" : ", ") + k;
  if (args) {
    for (const auto& a : f.spec.args) {
      if (isInteger(a.type)) *known += (known->empty() ? "" : ", ") + a.name;
    }
    *known += std::string(known->empty() ? "" : ", ") + "num_sms, warp_size";
  }
  return [&f, knobs, args](std::string_view name) -> int {
    if (knobs) {
      for (size_t i = 0; i < f.knobs.size(); ++i) {
        if (f.knobs[i] == name) return static_cast<int>(i);
      }
    }
    if (args) {
      for (size_t i = 0; i < f.spec.args.size(); ++i) {
        if (f.spec.args[i].name == name && isInteger(f.spec.args[i].type)) return f.slotOfArg(i);
      }
      if (name == "num_sms") return f.slotNumSms();
      if (name == "warp_size") return f.slotWarpSize();
    }
    return -1;
  };
}

Status parseExprs(DataFamily* f, const Json& space) {
  const std::string& n = f->spec.name;
  std::string known_knobs, known_all, known_args;
  auto on_knobs = resolverFor(*f, true, false, &known_knobs);
  auto on_all = resolverFor(*f, true, true, &known_all);
  auto on_args = resolverFor(*f, false, true, &known_args);
  if (auto c = space.find("constraints"); c != space.end()) {
    if (!c->is_array()) return Status::InvalidArgument("kernel '" + n + "': constraints must be an array of strings");
    for (const Json& e : *c) {
      if (!e.is_string()) return Status::InvalidArgument("kernel '" + n + "': constraints must be strings");
      KTUNE_ASSIGN_OR_RETURN(Expr x, Expr::parse(e.get<std::string>(), on_knobs, "constraint", known_knobs));
      f->constraints.push_back(std::move(x));
    }
  }
  if (f->spec.key.size() > static_cast<size_t>(KeyBuilder::kMaxFields))
    return Status::InvalidArgument("kernel '" + n + "': more than " +
                                   std::to_string(KeyBuilder::kMaxFields) + " key fields");
  for (const auto& k : f->spec.key) {
    KTUNE_ASSIGN_OR_RETURN(Expr x, Expr::parse(k, on_args, "key field", known_args));
    f->key.push_back(std::move(x));
    f->key_names.push_back(k);
  }
  if (f->spec.grid.empty() || f->spec.grid.size() > 3 || f->spec.block.empty() || f->spec.block.size() > 3)
    return Status::InvalidArgument("kernel '" + n + "': grid and block need 1 to 3 expressions each");
  for (size_t i = 0; i < f->spec.grid.size(); ++i) {
    KTUNE_ASSIGN_OR_RETURN(f->grid[i], Expr::parse(f->spec.grid[i], on_all, "grid", known_all));
    f->has_grid[i] = true;
  }
  for (size_t i = 0; i < f->spec.block.size(); ++i) {
    KTUNE_ASSIGN_OR_RETURN(f->block[i], Expr::parse(f->spec.block[i], on_all, "block", known_all));
    f->has_block[i] = true;
  }
  if (!f->spec.shared_bytes.empty()) {
    KTUNE_ASSIGN_OR_RETURN(f->shared, Expr::parse(f->spec.shared_bytes, on_all, "shared_bytes", known_all));
    f->has_shared = true;
  }
  return Status::Ok();
}

Status parseDefault(DataFamily* f, const Json& space) {
  for (size_t i = 0; i < f->knobs.size(); ++i) f->default_config.set(f->knobs[i], f->knob_values[i][0]);
  auto d = space.find("default");
  if (d == space.end()) return Status::Ok();
  if (!d->is_object()) return Status::InvalidArgument("kernel '" + f->spec.name + "': default must be an object");
  for (auto it = d->begin(); it != d->end(); ++it) {
    bool known = false;
    for (const auto& k : f->knobs) known |= k == it.key();
    if (!known || !it->is_number_integer())
      return Status::InvalidArgument("kernel '" + f->spec.name + "': default '" + it.key() +
                                     "' must be a knob of params with an integer value");
    f->default_config.set(it.key(), it->get<int64_t>());
  }
  return Status::Ok();
}

Status checkNames(const KernelSpec& s) {
  if (s.source_fn ? !s.source.empty() : (s.source.empty() || s.entry.empty()))
    return Status::InvalidArgument("kernel '" + s.name + "': " +
                                   (s.source_fn ? "source_fn replaces source: give one of them"
                                                : "source and entry are required"));
  if (s.args.size() > DataFamily::kMaxArgs)
    return Status::InvalidArgument("kernel '" + s.name + "': more than " +
                                   std::to_string(DataFamily::kMaxArgs) + " arguments");
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (!isIdentifier(s.args[i].name))
      return Status::InvalidArgument("kernel '" + s.name + "': argument " + std::to_string(i) +
                                     " needs an identifier name");
    int t = static_cast<int>(s.args[i].type);
    if (t < 0 || t > 4)
      return Status::InvalidArgument("kernel '" + s.name + "': argument '" + s.args[i].name +
                                     "' has an unknown type " + std::to_string(t));
  }
  return Status::Ok();
}

// Slots of one evaluation: knobs from `c` (when given), arguments, device values.
void fillSlots(const DataFamily& f, const Knobs* c, const DataProblem& p, const DeviceFacts* d,
               int64_t* v) {
  if (c) {
    for (size_t i = 0; i < f.knobs.size(); ++i) v[i] = c->get(f.knobs[i].c_str());
  }
  for (size_t i = 0; i < p.count && i < f.spec.args.size(); ++i) {
    const Value& a = p.args[i];
    v[f.slotOfArg(i)] = a.type == ArgType::kI32 ? a.v.i32 : a.type == ArgType::kI64 ? a.v.i64 : 0;
  }
  v[f.slotNumSms()] = d ? d->multiprocessors : 0;
  v[f.slotWarpSize()] = d ? d->warp_size : 0;
}

// A dimension's value, or 0 (rejected by the launch) when it fails or is out of range.
unsigned dimOf(const Expr& e, bool has, const int64_t* v) {
  if (!has) return 1;
  int64_t x = 0;
  if (!e.evalFast(v, &x) || x < 1 || x > int64_t{0xffffffff}) return 0;
  return static_cast<unsigned>(x);
}

const DataProblem& problemOf(const void* p) { return *static_cast<const DataProblem*>(p); }

// True when the launch rule (grid, block or shared bytes) reads expression slot `slot`.
bool launchReads(const DataFamily& f, int slot) {
  bool used = f.has_shared && f.shared.uses(slot);
  for (int d = 0; d < 3; ++d)
    used = used || (f.has_grid[d] && f.grid[d].uses(slot)) || (f.has_block[d] && f.block[d].uses(slot));
  return used;
}

// True when the launch rule (grid, block, shared) reads no argument, or only arguments that are
// key fields as they are (not bucketed): the engine may then compute the dims once per key.
bool launchPerKey(const DataFamily& f) {
  for (size_t i = 0; i < f.spec.args.size(); ++i) {
    const int slot = f.slotOfArg(i);
    const bool used = launchReads(f, slot);
    bool exact = false;
    for (const Expr& k : f.key) exact = exact || k.bareSlot() == slot;
    if (used && !exact) return false;
  }
  return true;
}

}  // namespace

Status DataFamily::checkArgs(const Value* args, size_t count) const {
  if (count != spec.args.size() || (count > 0 && !args))
    return Status::InvalidArgument("kernel '" + spec.name + "': " + std::to_string(count) +
                                   " arguments given, the signature has " +
                                   std::to_string(spec.args.size()));
  for (size_t i = 0; i < count; ++i) {
    if (args[i].type != spec.args[i].type)
      return Status::InvalidArgument("kernel '" + spec.name + "': argument " + std::to_string(i) +
                                     " ('" + spec.args[i].name + "') must be " +
                                     argTypeName(spec.args[i].type));
  }
  return Status::Ok();
}

Expected<std::shared_ptr<const DataFamily>> parseKernelSpec(const KernelSpec& spec) {
  auto f = std::make_shared<DataFamily>();
  f->spec = spec;
  KTUNE_RETURN_IF_ERROR(checkNames(spec));
  // A caller's text (or a file it read): bounded before anything is built from it.
  JsonLimits limits;
  limits.max_bytes = size_t(1) << 20;
  limits.code = Code::kInvalidArgument;
  auto parsed = parseJsonBounded(spec.space_json, limits);
  if (!parsed.ok()) {
    return parsed.status().withContext("kernel '" + spec.name + "': space_json");
  }
  const Json space = std::move(*parsed);
  KTUNE_RETURN_IF_ERROR(parseSpace(space, f.get()));
  KTUNE_RETURN_IF_ERROR(parseExprs(f.get(), space));
  KTUNE_RETURN_IF_ERROR(parseDefault(f.get(), space));
  for (size_t i = 0; i < spec.args.size(); ++i) {
    const int slot = f->slotOfArg(i);
    bool read = launchReads(*f, slot);
    for (const Expr& k : f->key) read = read || k.uses(slot);
    if (read) f->plan_args.push_back(static_cast<uint32_t>(i));
  }
  return std::shared_ptr<const DataFamily>(std::move(f));
}

namespace {

// Constraints and the shared-memory pre-check: knob expressions of the spec.
void setSpaceRules(const std::shared_ptr<const DataFamily>& fam, ErasedKernelSpec& e) {
  const DataFamily& f = *fam;
  for (size_t i = 0; i < f.constraints.size(); ++i) {
    e.constraints.push_back({f.constraints[i].text(), [fam, i](const Knobs& c) {
      int64_t v[DataFamily::kMaxSlots] = {};
      fillSlots(*fam, &c, DataProblem{}, nullptr, v);
      int64_t r = 0;
      return fam->constraints[i].evalFast(v, &r) && r != 0;
    }});
  }
  // A shared-memory rule over knobs alone also drops configs that cannot fit before compiling.
  bool knobs_only = f.has_shared;
  for (int slot = static_cast<int>(f.knobs.size()); slot <= f.slotWarpSize(); ++slot)
    knobs_only = knobs_only && !f.shared.uses(slot);
  if (knobs_only) {
    e.shared_bytes = [fam](const Knobs& c) {
      int64_t v[DataFamily::kMaxSlots] = {};
      fillSlots(*fam, &c, DataProblem{}, nullptr, v);
      int64_t r = 0;
      return fam->shared.evalFast(v, &r) ? r : std::numeric_limits<int64_t>::max();
    };
  }
}

// Key, launch rule and arguments: the hot path's callbacks.
void setCallbacks(const std::shared_ptr<const DataFamily>& fam, ErasedKernelSpec& e) {
  // The hot path's slot arrays are not zeroed (784 bytes, a libc memset per call): fillSlots writes
  // every slot a key or launch expression can read (key fields read arguments only).
  e.key = [fam](const void* p, KeyFields& k) {
    int64_t v[DataFamily::kMaxSlots];
    fillSlots(*fam, nullptr, problemOf(p), nullptr, v);
    for (size_t i = 0; i < fam->key.size(); ++i) {
      int64_t x = 0;
      if (!fam->key[i].evalFast(v, &x)) x = INT64_MIN;  // the launch rule fails as well
      k.add(fam->key_names[i].c_str(), x);
    }
  };
  e.launch = [fam](const Knobs& c, const void* p, const DeviceFacts& d) {
    int64_t v[DataFamily::kMaxSlots];
    fillSlots(*fam, &c, problemOf(p), &d, v);
    Launch l;
    for (int i = 0; i < 3; ++i) {
      l.grid[i] = dimOf(fam->grid[i], fam->has_grid[i], v);
      l.block[i] = dimOf(fam->block[i], fam->has_block[i], v);
    }
    int64_t sh = 0;
    if (fam->has_shared && (!fam->shared.evalFast(v, &sh) || sh < 0)) l.grid[0] = 0;
    l.shared_bytes = static_cast<size_t>(sh);
    return l;
  };
  e.launch_per_key = launchPerKey(*fam);
  e.args = [](const void* p, ArgPack& a) {
    const DataProblem& d = problemOf(p);
    for (size_t i = 0; i < d.count; ++i) {
      const Value& x = d.args[i];
      switch (x.type) {
        case ArgType::kPtr: a.add(x.v.ptr); break;
        case ArgType::kI32: a.add(x.v.i32); break;
        case ArgType::kI64: a.add(x.v.i64); break;
        case ArgType::kF32: a.add(x.v.f32); break;
        case ArgType::kF64: a.add(x.v.f64); break;
      }
    }
  };
}

}  // namespace

ErasedKernelSpec toTypedSpec(std::shared_ptr<const DataFamily> fam) {
  const DataFamily& f = *fam;
  ErasedKernelSpec e;
  e.name = f.spec.name;
  e.source = f.spec.source;
  e.entry = f.spec.entry;
  e.compile_options = f.spec.compile_options;
  if (f.spec.source_fn) {
    e.source_fn = [fam](const Knobs& c, const void*) { return fam->spec.source_fn(c.toString()); };
  }
  if (f.spec.before_run) {
    e.before_run = [fam](const void* p, StreamHandle s) {
      return fam->spec.before_run(problemOf(p).args, problemOf(p).count, s);
    };
  }
  for (size_t i = 0; i < f.knobs.size(); ++i) e.space.push_back({f.knobs[i], f.knob_values[i]});
  for (const auto& k : f.knobs) e.default_config.emplace_back(k, f.default_config.getInt(k));
  e.no_verify = f.spec.no_verify;
  e.programmatic_wait = f.spec.programmatic_wait;
  e.verify_hint = "families registered from data have no verifier; set KernelSpec::no_verify "
                  "(C: ktune_family_desc.no_verify = 1) to make this choice explicit";
  setSpaceRules(fam, e);
  setCallbacks(fam, e);
  e.problem_type = &typeid(DataProblem);
  return e;
}

}  // namespace ktune::api
