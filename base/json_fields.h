// Range-checked reads of numeric JSON fields, shared by the code-object store's metadata and the
// tuning database. Header-only; include only where nlohmann/json is linked.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

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

// A struct's JSON form as data: `names` and a std::tie of the members in the same order (one
// list serves both directions, so writing and reading a struct cannot drift apart).
template <size_t N, typename... M>
nlohmann::json writeFields(const std::array<const char*, N>& names, const std::tuple<M&...>& tie) {
  static_assert(N == sizeof...(M), "one name per member");
  nlohmann::json j = nlohmann::json::object();
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((j[names[I]] = std::get<I>(tie)), ...);
  }(std::index_sequence_for<M...>{});
  return j;
}

// Reads the fields present (readField: range-checked, throws on a mistyped value).
template <size_t N, typename... M>
void readFields(const nlohmann::json& j, const std::array<const char*, N>& names,
                std::tuple<M&...> tie) {
  static_assert(N == sizeof...(M), "one name per member");
  [&]<size_t... I>(std::index_sequence<I...>) {
    (readField(j, names[I], std::get<I>(tie)), ...);
  }(std::index_sequence_for<M...>{});
}

}  // namespace ktune::jsonfields
