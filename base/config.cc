#include "base/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

namespace ktune {

std::string paramValueToString(const ParamValue& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  return std::get<std::string>(v);
}

namespace {
bool validName(std::string_view n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}
bool validIdent(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}
std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}
}  // namespace

Config::Config(std::initializer_list<std::pair<std::string, ParamValue>> init) {
  for (auto& [k, v] : init) set(k, v);
}

Config& Config::set(const std::string& name, ParamValue value) {
  auto it = std::lower_bound(params_.begin(), params_.end(), name,
                             [](const auto& p, const std::string& n) { return p.first < n; });
  if (it != params_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    params_.insert(it, {name, std::move(value)});
  }
  return *this;
}

bool Config::has(std::string_view name) const {
  return std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return p.first == name; });
}

int64_t Config::getInt(std::string_view name, int64_t fallback) const {
  for (const auto& [k, v] : params_) {
    if (k == name) return std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v) : fallback;
  }
  return fallback;
}

std::string Config::getStr(std::string_view name, std::string fallback) const {
  for (const auto& [k, v] : params_) {
    if (k == name) return paramValueToString(v);
  }
  return fallback;
}

std::string Config::toString() const {
  std::string out;
  for (const auto& [k, v] : params_) {
    if (!out.empty()) out += ',';
    out += k;
    out += '=';
    out += paramValueToString(v);
  }
  return out;
}

Expected<Config> Config::parse(std::string_view text) {
  Config c;
  text = trim(text);
  if (text.empty()) return c;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view tok = trim(text.substr(pos, comma - pos));
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("config token '" + std::string(tok) +
                                     "' is not NAME=VALUE (in '" + std::string(text) + "')");
    }
    std::string_view name = trim(tok.substr(0, eq));
    std::string_view val = trim(tok.substr(eq + 1));
    if (!validName(name)) {
      return Status::InvalidArgument("bad parameter name '" + std::string(name) + "' in config '" +
                                     std::string(text) + "'");
    }
    if (c.has(name)) {
      return Status::InvalidArgument("parameter '" + std::string(name) + "' given twice");
    }
    int64_t iv = 0;
    auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), iv);
    if (ec == std::errc() && ptr == val.data() + val.size()) {
      c.set(std::string(name), iv);
    } else if (ec == std::errc::result_out_of_range) {
      return Status::InvalidArgument("value of '" + std::string(name) + "' is out of range");
    } else if (validIdent(val)) {
      c.set(std::string(name), std::string(val));
    } else {
      return Status::InvalidArgument("bad value '" + std::string(val) + "' for parameter '" +
                                     std::string(name) + "'");
    }
    if (comma == text.size()) break;
    pos = comma + 1;
  }
  return c;
}

ConfigSpace& ConfigSpace::add(std::string name, std::vector<ParamValue> values,
                              std::string backend) {
  params_.push_back({std::move(name), std::move(values), std::move(backend)});
  return *this;
}

ConfigSpace& ConfigSpace::addInts(std::string name, std::vector<int64_t> values,
                                  std::string backend) {
  std::vector<ParamValue> v(values.begin(), values.end());
  return add(std::move(name), std::move(v), std::move(backend));
}

ConfigSpace& ConfigSpace::addOptionalInts(std::string name, std::vector<int64_t> values,
                                          std::string backend) {
  addInts(std::move(name), std::move(values), std::move(backend));
  params_.back().optional = true;
  return *this;
}

ConfigSpace& ConfigSpace::addStrings(std::string name, std::vector<std::string> values,
                                     std::string backend) {
  std::vector<ParamValue> v;
  for (auto& s : values) v.emplace_back(std::move(s));
  return add(std::move(name), std::move(v), std::move(backend));
}

ConfigSpace& ConfigSpace::constrain(std::string description, Predicate pred) {
  constraints_.emplace_back(std::move(description), std::move(pred));
  return *this;
}

ConfigSpace& ConfigSpace::sharedBytes(ResourceFn fn) {
  shared_fn_ = std::move(fn);
  return *this;
}

static bool applies(const ParamSpec& p, std::string_view backend) {
  return p.backend.empty() || backend.empty() || p.backend == backend;
}
// What enumerate() and rawSize() iterate: the parameters every config has.
static bool enumerated(const ParamSpec& p, std::string_view backend) {
  return !p.optional && applies(p, backend);
}

size_t ConfigSpace::rawSize(std::string_view backend) const {
  size_t n = 1;
  for (const auto& p : params_) {
    if (!enumerated(p, backend)) continue;
    if (p.values.empty()) return 0;
    // Saturate: a product that wrapped would report a huge space as tiny (2^64 points read as 0).
    if (__builtin_mul_overflow(n, p.values.size(), &n)) n = SIZE_MAX;
  }
  return n;
}

Enumeration ConfigSpace::enumerate(std::string_view backend, int64_t shared_limit_bytes) const {
  Enumeration out;
  std::vector<const ParamSpec*> ps;
  for (const auto& p : params_) {
    if (enumerated(p, backend)) ps.push_back(&p);
  }
  for (const auto* p : ps) {
    if (p->values.empty()) return out;
  }
  std::vector<size_t> idx(ps.size(), 0);
  while (true) {
    Config c;
    for (size_t i = 0; i < ps.size(); ++i) c.set(ps[i]->name, ps[i]->values[idx[i]]);
    std::string reason;
    for (const auto& [desc, pred] : constraints_) {
      if (!pred(c)) {
        reason = "constraint: " + desc;
        break;
      }
    }
    if (reason.empty() && shared_limit_bytes > 0 && shared_fn_) {
      int64_t need = shared_fn_(c);
      if (need > shared_limit_bytes) {
        reason = "needs " + std::to_string(need) + " B shared/LDS > device limit " +
                 std::to_string(shared_limit_bytes) + " B";
      }
    }
    if (reason.empty()) {
      out.accepted.push_back(std::move(c));
    } else {
      out.rejected.push_back({std::move(c), std::move(reason)});
    }
    size_t i = 0;
    for (; i < ps.size(); ++i) {
      if (++idx[i] < ps[i]->values.size()) break;
      idx[i] = 0;
    }
    if (i == ps.size()) break;
  }
  return out;
}

Status ConfigSpace::validate(const Config& c, std::string_view backend) const {
  for (const auto& [name, value] : c.params()) {
    const ParamSpec* spec = nullptr;
    for (const auto& p : params_) {
      if (p.name == name && applies(p, backend)) spec = &p;
    }
    if (!spec) return Status::InvalidArgument("unknown parameter '" + name + "'");
    if (std::find(spec->values.begin(), spec->values.end(), value) == spec->values.end()) {
      // Values outside the list are allowed for pinned configs as long as constraints hold.
    }
  }
  for (const auto& p : params_) {
    if (enumerated(p, backend) && !c.has(p.name)) {
      return Status::InvalidArgument("config lacks parameter '" + p.name + "'");
    }
  }
  for (const auto& [desc, pred] : constraints_) {
    if (!pred(c)) return Status::InvalidArgument("config " + c.toString() + " violates " + desc);
  }
  return Status::Ok();
}

}  // namespace ktune
