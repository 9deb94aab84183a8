// ktune — tuning configurations and config spaces.
//
// A Config is a small value type: named parameters with integer or identifier values. Its string
// form ("BLOCK_M=128,BLOCK_N=64,num_warps=4") is stable (sorted by name) and is what keys, logs
// and the tuning database use; parse() reads it back.
//
// A ConfigSpace (CLBlast style) is parameters with value lists, optionally restricted to one
// backend ("cuda" / "hip"), plus named constraints (predicates over the parameters) and a
// resource function (shared/LDS bytes a config needs) used to drop configs before compiling.
// ConfigSpace is immutable once built; enumerate() is const and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"

namespace ktune {

using ParamValue = std::variant<int64_t, std::string>;
std::string paramValueToString(const ParamValue& v);

class Config {
 public:
  Config() = default;
  Config(std::initializer_list<std::pair<std::string, ParamValue>> init);

  // Sets (or replaces) a parameter. Names: [A-Za-z_][A-Za-z0-9_]*.
  Config& set(const std::string& name, ParamValue value);
  bool has(std::string_view name) const;
  // Integer value; `fallback` when absent or not an integer.
  int64_t getInt(std::string_view name, int64_t fallback = 0) const;
  // Identifier value (integers are rendered in decimal); `fallback` when absent.
  std::string getStr(std::string_view name, std::string fallback = "") const;
  const std::vector<std::pair<std::string, ParamValue>>& params() const { return params_; }
  bool empty() const { return params_.empty(); }

  // Stable form: "A=1,B=x" sorted by name; "" for an empty config.
  std::string toString() const;
  // Inverse of toString(). Whitespace around tokens is ignored. Errors name the bad token.
  static Expected<Config> parse(std::string_view text);

  bool operator==(const Config& o) const { return params_ == o.params_; }
  bool operator!=(const Config& o) const { return !(*this == o); }
  bool operator<(const Config& o) const { return toString() < o.toString(); }

 private:
  std::vector<std::pair<std::string, ParamValue>> params_;  // sorted by name
};

struct ConfigHash {
  size_t operator()(const Config& c) const { return std::hash<std::string>()(c.toString()); }
};

struct ParamSpec {
  std::string name;
  std::vector<ParamValue> values;
  std::string backend;  // "" = every backend, else "cuda" or "hip"
  bool optional = false;  // addOptionalInts: may be absent, never enumerated
};

struct RejectedConfig {
  Config config;
  std::string reason;  // e.g. "constraint: BLOCK_K % (8 * num_warps) == 0" or "shared 240 KiB > 227 KiB"
};

struct Enumeration {
  std::vector<Config> accepted;
  std::vector<RejectedConfig> rejected;
};

class ConfigSpace {
 public:
  using Predicate = std::function<bool(const Config&)>;
  using ResourceFn = std::function<int64_t(const Config&)>;

  ConfigSpace& add(std::string name, std::vector<ParamValue> values, std::string backend = "");
  ConfigSpace& addInts(std::string name, std::vector<int64_t> values, std::string backend = "");
  ConfigSpace& addStrings(std::string name, std::vector<std::string> values,
                          std::string backend = "");
  // A knob a config may leave out (the kernel's host code then reads its default): validate()
  // accepts configs with or without it (constraints see it absent, so they must read the
  // default), enumerate() and rawSize() leave it out, so it widens no tuning run; pinned and probe
  // configs set it. `values` are the ones meant (validate() lets pinned values outside them pass).
  ConfigSpace& addOptionalInts(std::string name, std::vector<int64_t> values,
                               std::string backend = "");
  // A config is kept only if every constraint holds; `description` is the rejection reason.
  ConfigSpace& constrain(std::string description, Predicate pred);
  // Bytes of shared memory / LDS per block a config needs (static + dynamic).
  ConfigSpace& sharedBytes(ResourceFn fn);

  const std::vector<ParamSpec>& params() const { return params_; }
  // Cartesian product of the parameters that apply to `backend` ("" = all), filtered by the
  // constraints and, when shared_limit_bytes > 0, by the resource function.
  Enumeration enumerate(std::string_view backend = "", int64_t shared_limit_bytes = 0) const;
  // Bytes the resource function reports (0 if none set).
  int64_t sharedBytesOf(const Config& c) const { return shared_fn_ ? shared_fn_(c) : 0; }
  // Number of points before constraints; SIZE_MAX when the product does not fit in size_t.
  size_t rawSize(std::string_view backend = "") const;
  // Checks that `c` names only known parameters with listed values and meets the constraints.
  Status validate(const Config& c, std::string_view backend = "") const;

 private:
  std::vector<ParamSpec> params_;
  std::vector<std::pair<std::string, Predicate>> constraints_;
  ResourceFn shared_fn_;
};

}  // namespace ktune
