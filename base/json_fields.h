// Range-checked reads of numeric JSON fields, shared by the code-object store's metadata and the
// tuning database. Header-only; include only where nlohmann/json is linked.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ktune::jsonfields {

// nlohmann's get<int>() on a float such as 1e300 is a float-to-int cast out of range (undefined
// behaviour), and on a too-large integer it silently wraps; a hand-edited or corrupt file must
// instead read as malformed. Throws std::out_of_range / nlohmann type_error (callers catch).
template <typename T>
T checkedNumber(const nlohmann::json& v, const char* name) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
    bool ok = true;
    if (v.is_number_unsigned()) {
      ok = v.get<uint64_t>() <= uint64_t(hi);
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      ok = i >= int64_t(lo) && (hi > INT64_MAX / 2 || i <= int64_t(hi));
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      ok = std::isfinite(d) && d >= double(lo) && d < double(hi) + 1.0;
    }
    if (!ok) {
      throw std::out_of_range(std::string("field '") + name + "' value " + v.dump() +
                              " is out of range");
    }
  }
  return v.get<T>();
}

// Sets `out` from field `name` when present and not null.
template <typename T>
void readField(const nlohmann::json& j, const char* name, T& out) {
  auto it = j.find(name);
  if (it != j.end() && !it->is_null()) out = checkedNumber<T>(*it, name);
}

}  // namespace ktune::jsonfields
