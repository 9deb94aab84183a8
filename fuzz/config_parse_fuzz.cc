// Fuzzes Config::parse (the config-string parser used by keys, logs, the tuning database and the
// CLI). Properties: no crash or UB on any input; a parse error has a message; a parsed config's
// toString() re-parses to the same config and is a fixed point; ConfigSpace::validate never
// crashes on a parsed config.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/config.h"

namespace {

[[noreturn]] void die(const char* what, std::string_view input, const std::string& detail) {
  std::fprintf(stderr, "config_parse_fuzz: %s\n  input: '%.*s'\n  detail: %s\n", what,
               int(input.size()), input.data(), detail.c_str());
  std::abort();
}

const ktune::ConfigSpace& space() {
  static const ktune::ConfigSpace kSpace = [] {
    ktune::ConfigSpace s;
    s.addInts("BLOCK_M", {16, 32, 64, 128})
        .addInts("num_warps", {1, 2, 4, 8})
        .addStrings("mfma", {"16x16", "32x32"}, "hip")
        // Written overflow-free: fuzzed configs carry any int64 (a constraint like
        // 16 * num_warps was itself signed-overflow UB here).
        .constrain("BLOCK_M >= 16 * num_warps",
                   [](const ktune::Config& c) {
                     const int64_t bm = c.getInt("BLOCK_M"), nw = c.getInt("num_warps");
                     return nw <= 0 || (bm >= 0 && bm / 16 >= nw);
                   })
        .sharedBytes([](const ktune::Config& c) {
          const int64_t bm = c.getInt("BLOCK_M");
          return bm > INT64_MAX / 1024 || bm < INT64_MIN / 1024 ? INT64_MAX : bm * 1024;
        });
    return s;
  }();
  return kSpace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto c = ktune::Config::parse(text);
  if (!c.ok()) {
    if (c.status().code() != ktune::Code::kInvalidArgument || c.status().message().empty())
      die("parse error without kInvalidArgument + message", text, c.status().toString());
    return 0;
  }
  const std::string s = c->toString();
  auto again = ktune::Config::parse(s);
  if (!again.ok()) die("toString() does not re-parse", text, s + " -> " + again.status().toString());
  if (*again != *c) die("round trip changed the config", text, s + " -> " + again->toString());
  if (again->toString() != s) die("toString() is not a fixed point", text, s);
  for (const auto& [name, value] : c->params()) {
    if (!c->has(name)) die("has() misses a parsed name", text, name);
    (void)c->getInt(name);
    (void)c->getStr(name);
  }
  (void)space().validate(*c);
  (void)space().validate(*c, "cuda");
  (void)space().sharedBytesOf(*c);
  return 0;
}
